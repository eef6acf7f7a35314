package cli

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

var update = flag.Bool("update", false, "rewrite the golden files and the generated reference of docs/cli.md")

const (
	cliDoc        = "../../docs/cli.md"
	referenceFrom = "<!-- The reference below is generated from the command tree: go test ./internal/cli -run TestCLIReference -update -->"
	referenceTo   = "<!-- end of the generated reference -->"
)

// TestCLIReference: docs/cli.md names every command and every flag of the
// command tree, with its usage: its reference part is generated from the
// tree, and this test fails when they differ (-update rewrites it).
func TestCLIReference(t *testing.T) {
	b, err := os.ReadFile(cliDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	from, to := strings.Index(doc, referenceFrom), strings.Index(doc, referenceTo)
	if from < 0 || to < from {
		t.Fatalf("%s lacks the markers of its generated reference", cliDoc)
	}
	root := newRootCmd(newApp(nil, &bytes.Buffer{}, &bytes.Buffer{}, func(string) string { return "" }))
	ref := cliReference(root)
	current := doc[from+len(referenceFrom) : to]
	if current == ref {
		return
	}
	if *update {
		if err := os.WriteFile(cliDoc, []byte(doc[:from+len(referenceFrom)]+ref+doc[to:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("the reference in %s is not the command tree's: run go test ./internal/cli -run TestCLIReference -update\n%s", cliDoc, firstDiff(current, ref))
}

// cliReference is the Markdown reference of every visible command under
// root: its usage line, what it does and its own flags.
func cliReference(root *cobra.Command) string {
	var b strings.Builder
	b.WriteString("\n")
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			return
		}
		if c != root && c.Runnable() {
			fmt.Fprintf(&b, "\n### `%s`\n\n%s\n", c.UseLine(), strings.TrimSpace(c.Short))
			var flags []string
			c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
				if f.Hidden || f.Name == "help" {
					return
				}
				name := "--" + f.Name
				if f.Shorthand != "" {
					name = "-" + f.Shorthand + ", " + name
				}
				if f.Value.Type() != "bool" {
					name += " " + strings.ToUpper(f.Value.Type())
				}
				usage := strings.ReplaceAll(f.Usage, "|", `\|`)
				if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "[]" && f.DefValue != "0" {
					usage += fmt.Sprintf(" (default %s)", f.DefValue)
				}
				flags = append(flags, fmt.Sprintf("| `%s` | %s |", name, usage))
			})
			if len(flags) > 0 {
				b.WriteString("\n| flag | |\n|---|---|\n")
				b.WriteString(strings.Join(flags, "\n"))
				b.WriteString("\n")
			}
		}
		subs := slices.Clone(c.Commands())
		slices.SortFunc(subs, func(x, y *cobra.Command) int { return strings.Compare(x.Name(), y.Name()) })
		for _, s := range subs {
			walk(s)
		}
	}
	walk(root)
	b.WriteString("\n")
	return b.String()
}

// firstDiff shows where two texts first differ.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range max(len(al), len(bl)) {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n  doc:  %s\n  tree: %s", i+1, x, y)
		}
	}
	return ""
}
