package s3code

import (
	"errors"
	"fmt"
	"testing"
)

func TestOfAndCode(t *testing.T) {
	e := &Error{Code: "BadDigest", Msg: "no"}
	wrapped := fmt.Errorf("outer: %w", fmt.Errorf("inner: %w", e))
	if Of(wrapped) != e || Code(wrapped) != "BadDigest" || e.Error() != "BadDigest" {
		t.Fatalf("Of = %v, Code = %q", Of(wrapped), Code(wrapped))
	}
	if Of(errors.New("plain")) != nil || Code(nil) != "" {
		t.Fatal("an error without a code has one")
	}
}
