package config

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Duration is a time.Duration written as a Go duration string ("90s", "30m",
// "2h") in config files.
type Duration time.Duration

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON accepts a duration string such as "30m".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration must be a string such as \"30m\", got %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration such as \"90s\", \"30m\" or \"2h\"", s)
	}
	*d = Duration(v)
	return nil
}

// Bytes is a size written as "512MiB", "4GiB", "1.5GB" or a plain number of
// bytes in config files.
type Bytes int64

// MarshalJSON writes the size in the largest binary unit that divides it.
func (b Bytes) MarshalJSON() ([]byte, error) { return json.Marshal(b.String()) }

func (b Bytes) String() string {
	for _, u := range []struct {
		s string
		n int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if b != 0 && int64(b)%u.n == 0 {
			return fmt.Sprintf("%d%s", int64(b)/u.n, u.s)
		}
	}
	return strconv.FormatInt(int64(b), 10)
}

// UnmarshalJSON accepts a number of bytes or a string with a unit.
func (b *Bytes) UnmarshalJSON(data []byte) error {
	var n int64
	if err := json.Unmarshal(data, &n); err == nil {
		*b = Bytes(n)
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("a size must be a number of bytes or a string such as \"4GiB\", got %s", data)
	}
	v, err := ParseBytes(s)
	if err != nil {
		return err
	}
	*b = Bytes(v)
	return nil
}

var byteUnits = []struct {
	suffix string
	mult   float64
}{
	{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
	{"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3},
	{"Ti", 1 << 40}, {"Gi", 1 << 30}, {"Mi", 1 << 20}, {"Ki", 1 << 10},
	{"T", 1e12}, {"G", 1e9}, {"M", 1e6}, {"K", 1e3}, {"B", 1},
}

// ParseBytes parses "512MiB", "4GiB", "1.5GB", "2G", "100" into bytes.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := 1.0
	for _, u := range byteUnits {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || !(f >= 0) || f*mult > 1<<62 { // !(f >= 0) refuses NaN too
		return 0, fmt.Errorf("%q is not a size such as \"512MiB\" or \"4GiB\"", s)
	}
	return int64(f * mult), nil
}
