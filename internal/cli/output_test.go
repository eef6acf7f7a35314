package cli

import (
	"strings"
	"testing"
	"time"
)

func TestRelTime(t *testing.T) {
	now := time.Date(2025, 1, 2, 12, 0, 0, 0, time.UTC)
	ms := func(d time.Duration) int64 { return now.Add(d).UnixMilli() }
	tests := []struct {
		ms   int64
		want string
	}{
		{0, "-"},
		{ms(24 * time.Hour), "(in 1d)"},
		{ms(23*time.Hour + 59*time.Minute + 40*time.Second), "(in 1d)"},
		{ms(23*time.Hour + 5*time.Minute), "(in 23h5m)"},
		{ms(27 * time.Hour), "(in 1d3h)"},
		{ms(-10 * 24 * time.Hour), "(10d ago)"},
		{ms(-5 * time.Minute), "(5m ago)"},
		{ms(10 * time.Second), "(now)"},
	}
	for _, tt := range tests {
		got := relTimeMs(tt.ms, now)
		if !strings.HasSuffix(got, tt.want) {
			t.Errorf("relTimeMs(%d) = %q, want suffix %q", tt.ms, got, tt.want)
		}
		if tt.ms != 0 && !strings.HasPrefix(got, timeMs(tt.ms)) {
			t.Errorf("relTimeMs(%d) = %q, want the absolute time first", tt.ms, got)
		}
	}
}

func TestOutputFormatFlag(t *testing.T) {
	var f outputFormat
	for _, ok := range []string{"table", "json", "yaml", "JSON"} {
		if err := f.Set(ok); err != nil {
			t.Errorf("Set(%q): %v", ok, err)
		}
	}
	if f != formatJSON {
		t.Errorf("Set(JSON) gave %q", f)
	}
	if err := f.Set("xml"); err == nil {
		t.Error("Set(xml) accepted")
	}
}
