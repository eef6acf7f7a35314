package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/atelier-dev/atelier/internal/errs"
)

// outputFormat is the value of -o/--output.
type outputFormat string

// Output formats.
const (
	formatTable outputFormat = "table"
	formatJSON  outputFormat = "json"
	formatYAML  outputFormat = "yaml"
)

// String implements pflag.Value.
func (f *outputFormat) String() string { return string(*f) }

// Type implements pflag.Value.
func (f *outputFormat) Type() string { return "format" }

// Set implements pflag.Value, accepting table, json and yaml.
func (f *outputFormat) Set(s string) error {
	switch v := outputFormat(strings.ToLower(s)); v {
	case formatTable, formatJSON, formatYAML:
		*f = v
		return nil
	}
	return fmt.Errorf("must be one of table, json, yaml")
}

// show prints v in the selected format: the API object as JSON or YAML, or
// what table writes to an aligning tabwriter.
func (a *app) show(v any, table func(w io.Writer)) error {
	const op errs.Op = "cli.show"
	switch a.output {
	case formatJSON:
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return errs.E(op, errs.IO, fmt.Sprintf("cannot write output: %v", err))
		}
	case formatYAML:
		b, err := yaml.Marshal(v)
		if err != nil {
			return errs.E(op, errs.Internal, fmt.Sprintf("cannot encode output as YAML: %v", err))
		}
		if _, err := a.stdout.Write(b); err != nil {
			return errs.E(op, errs.IO, fmt.Sprintf("cannot write output: %v", err))
		}
	default:
		tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
		table(tw)
		if err := tw.Flush(); err != nil {
			return errs.E(op, errs.IO, fmt.Sprintf("cannot write output: %v", err))
		}
	}
	return nil
}

// row writes one tab-separated row.
func row(w io.Writer, cols ...string) {
	fmt.Fprintln(w, strings.Join(cols, "\t"))
}

// field writes a "Name:<tab>value" line of a detail view.
func field(w io.Writer, name, value string) {
	fmt.Fprintf(w, "%s:\t%s\n", name, value)
}

// timeMs formats epoch milliseconds as local time, "-" for zero.
func timeMs(ms int64) string {
	if ms == 0 {
		return "-"
	}
	return time.UnixMilli(ms).Local().Format("2006-01-02 15:04:05")
}

// relTimeMs formats epoch milliseconds as local time followed by how far
// it is from now, e.g. "2025-01-02 15:04:05 (in 23h59m)".
func relTimeMs(ms int64, now time.Time) string {
	if ms == 0 {
		return "-"
	}
	d := time.UnixMilli(ms).Sub(now).Round(time.Minute)
	switch {
	case d > 0:
		return fmt.Sprintf("%s (in %s)", timeMs(ms), shortDuration(d))
	case d < 0:
		return fmt.Sprintf("%s (%s ago)", timeMs(ms), shortDuration(-d))
	}
	return timeMs(ms) + " (now)"
}

// shortDuration formats a whole number of minutes as "9d", "1d3h", "23h59m", "5m".
func shortDuration(d time.Duration) string {
	days, d := d/(24*time.Hour), d%(24*time.Hour)
	hours, mins := d/time.Hour, (d%time.Hour)/time.Minute
	var b strings.Builder
	if days > 0 {
		fmt.Fprintf(&b, "%dd", days)
	}
	if hours > 0 && days < 2 {
		fmt.Fprintf(&b, "%dh", hours)
	}
	if mins > 0 && days == 0 {
		fmt.Fprintf(&b, "%dm", mins)
	}
	if b.Len() == 0 {
		return "0m"
	}
	return b.String()
}

// yesNo formats a bool for tables.
func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// orDash is s, or "-" when s is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// names joins a list of names for a table cell.
func names(ns []string) string {
	if len(ns) == 0 {
		return "-"
	}
	return strings.Join(ns, ", ")
}

// firstNonEmpty is a, or b when a is empty.
func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
