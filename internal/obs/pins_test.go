package obs

import (
	"slices"
	"strings"
	"testing"
)

// TestPins plays sequences of lookups, pins and retirements and checks
// which blobs each step says may be deleted.
func TestPins(t *testing.T) {
	type step struct {
		op   string // begin, pin, abandon, unpin, retire
		l    string // the lookup (begin, pin, abandon)
		ids  string // comma-separated blob ids (pin, unpin, retire)
		want string // comma-separated ids returned for deletion, sorted
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"nobody reads: deleted at once", []step{
			{op: "retire", ids: "a,b", want: "a,b"},
		}},
		{"a reader holds it until it is done", []step{
			{op: "begin", l: "r"},
			{op: "pin", l: "r", ids: "a,b"},
			{op: "retire", ids: "a,b"},
			{op: "unpin", ids: "a,b", want: "a,b"},
		}},
		{"two readers: the last one releases", []step{
			{op: "begin", l: "r1"},
			{op: "pin", l: "r1", ids: "a"},
			{op: "begin", l: "r2"},
			{op: "pin", l: "r2", ids: "a"},
			{op: "retire", ids: "a"},
			{op: "unpin", ids: "a"},
			{op: "unpin", ids: "a", want: "a"},
		}},
		{"a lookup that may have seen it keeps it until it pins and is done", []step{
			{op: "begin", l: "r"},
			{op: "retire", ids: "a"},
			{op: "pin", l: "r", ids: "a"},
			{op: "unpin", ids: "a", want: "a"},
		}},
		{"a lookup in flight at retirement that found something else", []step{
			{op: "begin", l: "r"},
			{op: "retire", ids: "a"},
			{op: "pin", l: "r", ids: "b", want: "a"},
			{op: "unpin", ids: "b"},
		}},
		{"an abandoned lookup releases", []step{
			{op: "begin", l: "r"},
			{op: "retire", ids: "a"},
			{op: "abandon", l: "r", want: "a"},
		}},
		{"a lookup begun after the retirement does not hold it", []step{
			{op: "begin", l: "old"},
			{op: "retire", ids: "a"},
			{op: "begin", l: "new"},
			{op: "abandon", l: "old", want: "a"},
			{op: "abandon", l: "new"},
		}},
		{"retired again while deferred: still one deletion", []step{
			{op: "begin", l: "r"},
			{op: "pin", l: "r", ids: "a"},
			{op: "retire", ids: "a"},
			{op: "retire", ids: "a"},
			{op: "unpin", ids: "a", want: "a"},
			{op: "retire", ids: "b", want: "b"},
		}},
		{"retired after its reader left: deleted at once", []step{
			{op: "begin", l: "r"},
			{op: "pin", l: "r", ids: "a"},
			{op: "unpin", ids: "a"},
			{op: "retire", ids: "a", want: "a"},
		}},
		{"blobs of an object held by one reader, another blob free", []step{
			{op: "begin", l: "r"},
			{op: "pin", l: "r", ids: "a,b"},
			{op: "retire", ids: "a,b"},
			{op: "begin", l: "s"},
			{op: "pin", l: "s", ids: "c"},
			{op: "unpin", ids: "c"},
			{op: "unpin", ids: "a,b", want: "a,b"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPins()
			tickets := map[string]ticket{}
			for i, s := range tt.steps {
				var ids []string
				if s.ids != "" {
					ids = strings.Split(s.ids, ",")
				}
				var got []string
				switch s.op {
				case "begin":
					tickets[s.l] = p.begin()
				case "pin":
					got = p.pin(tickets[s.l], ids)
				case "abandon":
					got = p.abandon(tickets[s.l])
				case "unpin":
					got = p.unpin(ids)
				case "retire":
					got = p.retire(ids)
				default:
					t.Fatalf("step %d: unknown op %q", i, s.op)
				}
				slices.Sort(got)
				if g := strings.Join(got, ","); g != s.want {
					t.Fatalf("step %d (%s %s %s): deletable %q, want %q", i, s.op, s.l, s.ids, g, s.want)
				}
			}
			if n := p.deferredCount(); n != 0 {
				t.Errorf("%d blobs still deferred at the end", n)
			}
			if len(p.held) != 0 || len(p.lookups) != 0 {
				t.Errorf("held %v, lookups %v at the end", p.held, p.lookups)
			}
		})
	}
}
