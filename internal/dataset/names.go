package dataset

import (
	"fmt"
	"regexp"
	"sync"
	"unicode/utf8"

	"github.com/atelier-dev/atelier/internal/text"
)

// Limits of a request.
const (
	MaxNameLen        = 64
	MaxDescriptionLen = 256
)

var nameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`) })

// ValidateName returns why name is not a dataset or version name, or "".
func ValidateName(name string) string {
	rule := fmt.Sprintf("use 1-%d letters, digits, '_', '-' or '.', starting with a letter or digit", MaxNameLen)
	switch {
	case name == "":
		return "required: " + rule
	case utf8.RuneCountInString(name) > MaxNameLen:
		return fmt.Sprintf("%q is %d characters long: %s", text.Clip(name, 80), utf8.RuneCountInString(name), rule)
	case !nameRe().MatchString(name):
		return fmt.Sprintf("%q is not a valid name: %s", text.Clip(name, 80), rule)
	}
	return ""
}
