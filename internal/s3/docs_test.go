package s3

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDocumentedOperations checks docs/obs.md's table of S3 operations
// against the router: every sub-resource the router refuses with
// NotImplemented is in the table as "not yet" or "deliberately not", every
// one it serves as "implemented", and every operation it routes is named
// as implemented.
func TestDocumentedOperations(t *testing.T) {
	doc, err := os.ReadFile("../../docs/obs.md")
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ ops, request, status string }
	var rows []row
	re := regexp.MustCompile(`(?m)^\| ([^|]+) \| ([^|]+) \| (implemented|not yet|deliberately not) \|`)
	for _, m := range re.FindAllStringSubmatch(string(doc), -1) {
		rows = append(rows, row{m[1], m[2], m[3]})
	}
	if len(rows) < 40 {
		t.Fatalf("found %d rows in the table of S3 operations; is it there?", len(rows))
	}
	for sub, sr := range subresources {
		var statuses []string
		for _, r := range rows {
			if regexp.MustCompile(`\?` + regexp.QuoteMeta(sub) + `\b`).MatchString(r.request) {
				statuses = append(statuses, r.status)
			}
		}
		if len(statuses) == 0 {
			t.Errorf("?%s is not in the table of docs/obs.md", sub)
			continue
		}
		for _, st := range statuses {
			if sr.implemented != (st == "implemented") {
				t.Errorf("?%s: the router has implemented=%v, docs/obs.md says %q", sub, sr.implemented, st)
			}
		}
	}
	for op := OpNone + 1; op < numOps; op++ {
		if op == OpOptions {
			continue
		}
		found := false
		for _, r := range rows {
			if r.status == "implemented" && regexp.MustCompile(`\b`+op.String()+`\b`).MatchString(r.ops) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s is routed but not in docs/obs.md as implemented", op)
		}
	}
	if !strings.Contains(string(doc), "| PostObject (browser-form upload) | `POST /bucket` | implemented |") {
		t.Error("browser-form uploads (OpPostObject) are not in the table as implemented")
	}
}
