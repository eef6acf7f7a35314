package sqlcore

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestContainsPattern(t *testing.T) {
	for in, want := range map[string]string{
		"":           "%%",
		"resnet":     "%resnet%",
		"ResNet-50":  "%resnet-50%",
		"50%":        "%50!%%",
		"a_b":        "%a!_b%",
		"wow!":       "%wow!!%",
		"ÄRGER":      "%Ärger%",
		"中文":         "%中文%",
		`back\slash`: `%back\slash%`,
	} {
		if got := containsPattern(in); got != want {
			t.Errorf("containsPattern(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestBatches(t *testing.T) {
	const mib = 1 << 20
	sizes := func(ss ...int) func(int) int { return func(i int) int { return ss[i] } }
	flat := func(n int) func(int) int { return func(int) int { return 10 } }
	for _, c := range []struct {
		name string
		n    int
		size func(int) int
		want []batch
	}{
		{"none", 0, flat(0), nil},
		{"one", 1, flat(1), []batch{{0, 1}}},
		{"five", 5, flat(5), []batch{{0, 4}, {4, 1}}},
		{"full", batchSize, flat(batchSize), []batch{{0, batchSize}}},
		{"full and three", batchSize + 3, flat(batchSize + 3), []batch{{0, batchSize}, {batchSize, 2}, {batchSize + 2, 1}}},
		{"big rows", 4, sizes(3*mib, 3*mib, 1, 1), []batch{{0, 1}, {1, 2}, {3, 1}}},
		{"huge row", 3, sizes(1, 10*mib, 1), []batch{{0, 1}, {1, 1}, {2, 1}}},
	} {
		if got := batches(c.n, c.size); !slices.Equal(got, c.want) {
			t.Errorf("%s: batches = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestBatchesRandom checks the invariants of batches on random sizes: the
// runs cover every row once, in order, each of a power-of-two length, at most
// batchSize rows and, unless one row, at most maxBatchBytes.
func TestBatchesRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		n := r.IntN(3000)
		ss := make([]int, n)
		for i := range ss {
			switch r.IntN(10) {
			case 0:
				ss[i] = r.IntN(6 << 20)
			default:
				ss[i] = r.IntN(200)
			}
		}
		next := 0
		for _, b := range batches(n, func(i int) int { return ss[i] }) {
			if b.start != next || b.n < 1 || b.n > batchSize || b.n&(b.n-1) != 0 {
				t.Fatalf("bad run %+v after row %d", b, next)
			}
			total := 0
			for _, s := range ss[b.start : b.start+b.n] {
				total += s
			}
			if b.n > 1 && total > maxBatchBytes {
				t.Fatalf("run %+v holds %d bytes", b, total)
			}
			next += b.n
		}
		if next != n {
			t.Fatalf("runs cover %d of %d rows", next, n)
		}
	}
}

func TestBatchInsert(t *testing.T) {
	got := batchInsert("INSERT INTO t (a, b) VALUES ", " ON CONFLICT DO NOTHING", 2, 3)
	want := "INSERT INTO t (a, b) VALUES (?, ?), (?, ?), (?, ?) ON CONFLICT DO NOTHING"
	if got != want {
		t.Errorf("batchInsert = %q, want %q", got, want)
	}
	if n := strings.Count(batchInsert("", "", 6, batchSize), "?"); n != 6*batchSize {
		t.Errorf("%d placeholders, want %d", n, 6*batchSize)
	}
}
