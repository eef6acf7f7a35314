package failure

import (
	"regexp"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// maxLines bounds the log lines read; the runner passes about 200.
const maxLines = 2000

// tracebackLine starts a Python traceback; it may follow a prefix such as
// "[rank0]: " that torch's elastic launcher puts on every line.
const tracebackLine = "Traceback (most recent call last):"

var (
	ansiEscape    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]`) })
	exceptionType = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([A-Za-z_][\w.]*)(?::|$)`) })
)

// logView is the log as Classify reads it.
type logView struct {
	lines   []string // cleaned lines, oldest first
	final   []string // from the last traceback to the end; all lines when there is none
	exc     string   // the exception line of the last traceback ("ValueError: bad"), "" if none
	excType string   // its type without module path ("ValueError"), "" if none
	last    string   // the last non-empty line
}

// readLog cleans the lines (terminal escapes removed, progress-bar carriage
// returns resolved to what the terminal showed last) and finds the final
// block and exception.
func readLog(raw []string) logView {
	var lines []string
	for _, r := range raw {
		for _, l := range strings.Split(r, "\n") {
			lines = append(lines, cleanLine(l))
		}
	}
	if len(lines) > maxLines {
		lines = lines[len(lines)-maxLines:]
	}
	v := logView{lines: lines, final: lines}
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.TrimSpace(lines[i]) != "" {
			v.last = strings.TrimSpace(lines[i])
			break
		}
	}
	t := -1
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], tracebackLine) {
			t = i
			break
		}
	}
	if t < 0 {
		return v
	}
	v.final = lines[t:]
	prefix := lines[t][:strings.Index(lines[t], tracebackLine)]
	for _, l := range lines[t+1:] {
		if prefix != "" {
			l = strings.TrimPrefix(l, prefix)
		}
		if strings.TrimSpace(l) == "" || l[0] == ' ' || l[0] == '\t' {
			continue // frames, source lines, carets
		}
		if m := exceptionType().FindStringSubmatch(l); m != nil {
			v.exc = strings.TrimSpace(l)
			name := m[1]
			if i := strings.LastIndexByte(name, '.'); i >= 0 {
				name = name[i+1:]
			}
			v.excType = name
		}
		break
	}
	return v
}

// cleanLine removes terminal escapes and keeps the text after the last
// carriage return that is followed by something.
func cleanLine(l string) string {
	l = ansiEscape().ReplaceAllString(l, "")
	l = strings.TrimRight(l, "\r")
	if i := strings.LastIndexByte(l, '\r'); i >= 0 {
		l = l[i+1:]
	}
	return strings.TrimRightFunc(l, unicode.IsSpace)
}

// find returns the index of the last line for which match is true.
func find(lines []string, match func(string) bool) (int, bool) {
	for i := len(lines) - 1; i >= 0; i-- {
		if match(lines[i]) {
			return i, true
		}
	}
	return -1, false
}

// clip makes s one printable line of at most maxQuote runes.
func clip(s string) string {
	var b strings.Builder
	n := 0
	space := false
	for _, r := range strings.TrimSpace(s) {
		if r == utf8.RuneError || unicode.IsControl(r) || unicode.IsSpace(r) {
			if !space {
				b.WriteByte(' ')
				space = true
				n++
			}
			continue
		}
		space = false
		if n == maxQuote {
			return strings.TrimSpace(b.String()) + "…"
		}
		b.WriteRune(r)
		n++
	}
	return strings.TrimSpace(b.String())
}

// quote puts a clipped string (a path, a URL) in single quotes, as Python
// prints them.
func quote(s string) string { return "'" + clip(s) + "'" }
