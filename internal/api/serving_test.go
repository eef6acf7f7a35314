package api

import (
	"encoding/json"
	"testing"
)

func TestFlexInt(t *testing.T) {
	for in, want := range map[string]int{`70`: 70, `"30"`: 30, `" 5 "`: 5, `""`: 0, `null`: 0} {
		var c struct{ W FlexInt }
		if err := json.Unmarshal([]byte(`{"W":`+in+`}`), &c); err != nil || int(c.W) != want {
			t.Errorf("%s → %d, %v; want %d", in, c.W, err, want)
		}
	}
	for _, bad := range []string{`"x"`, `1.5`, `true`} {
		var c struct{ W FlexInt }
		if err := json.Unmarshal([]byte(`{"W":`+bad+`}`), &c); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
