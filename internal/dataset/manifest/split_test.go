package manifest

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/atelier-dev/atelier/internal/dataset/format"
)

func TestParseSplit(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Split
		err  string // a part of the error; "" for none
	}{
		{in: "", want: Split{}},
		{in: "  ", want: Split{}},
		{in: "train=0.8,seed=1", want: Split{Train: 0.8, Eval: 0.2, Seed: 1}},
		{in: "train=0.7,eval=0.2,test=0.1", want: Split{Train: 0.7, Eval: 0.2, Test: 0.1}},
		{in: "train=0.7,eval=0.2", want: Split{Train: 0.7, Eval: 0.2, Test: 0.1}},
		{in: "train=0.7,test=0.1", want: Split{Train: 0.7, Eval: 0.2, Test: 0.1}},
		{in: "eval=0.25", want: Split{Train: 0.75, Eval: 0.25}},
		{in: "val=0.2,test=0.2", want: Split{Train: 0.6, Eval: 0.2, Test: 0.2}},
		{in: " Train = 80% , VALIDATION=20%, seed=-7 ,", want: Split{Train: 0.8, Eval: 0.2, Seed: -7}},
		{in: "train=1", want: Split{Train: 1}},
		{in: "test=1", want: Split{Test: 1}},
		{in: "train=0.8,eval=0.2,test=0,seed=9223372036854775807", want: Split{Train: 0.8, Eval: 0.2, Seed: math.MaxInt64}},
		{in: "train=abc", err: `split part "train=abc": "abc" is not a ratio`},
		{in: "train=0.8,eval", err: `split part "eval": want NAME=VALUE`},
		{in: "train=1.5", err: `split part "train=1.5": "1.5" is not between 0 and 1`},
		{in: "train=-0.1", err: `not between 0 and 1`},
		{in: "train=NaN", err: `"NaN" is not a ratio`},
		{in: "train=0.5,train=0.5", err: `split part "train=0.5": the train ratio is given twice`},
		{in: "seed=1,seed=2", err: `split part "seed=2": the seed is given twice`},
		{in: "seed=1.5,train=0.5", err: `split part "seed=1.5": the seed "1.5" is not an integer`},
		{in: "tran=0.8", err: `split part "tran=0.8": "tran" is not train, eval, test or seed`},
		{in: "seed=3", err: "gives no ratio"},
		{in: "train=0.8,eval=0.3", err: "add up to 1.1, more than 1"},
		{in: "train=0.5,eval=0.2,test=0.2", err: "add up to 0.9, not 1"},
	} {
		got, err := ParseSplit(c.in)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("ParseSplit(%q): %v", c.in, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("ParseSplit(%q) = %+v, %v; want an error with %q", c.in, got, err, c.err)
		case c.err == "" && !reflect.DeepEqual(got, c.want):
			t.Errorf("ParseSplit(%q) = %+v, want %+v", c.in, got, c.want)
		case c.err == "":
			// String reads back as the same split.
			back, err := ParseSplit(got.String())
			if err != nil || !reflect.DeepEqual(back, got) {
				t.Errorf("ParseSplit(%q) = %+v, %v; want %+v", got.String(), back, err, got)
			}
		}
	}
}

func TestParsePattern(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []PatternRule
		err  string
	}{
		{in: "", want: nil},
		{in: "train/**=TRAIN,val/**=EVAL,test/**=TEST", want: []PatternRule{{"train/**", format.Train}, {"val/**", format.Eval}, {"test/**", format.Test}}},
		{in: " **/holdout/*.jpg = test , *=val,", want: []PatternRule{{"**/holdout/*.jpg", format.Test}, {"*", format.Eval}}},
		{in: "a=b=train", want: []PatternRule{{"a=b", format.Train}}},
		{in: "train/**", err: `pattern rule "train/**": want GLOB=USAGE`},
		{in: "train/**=TRAINING", err: `pattern rule "train/**=TRAINING": "TRAINING" is not TRAIN, EVAL or TEST`},
		{in: "=TRAIN", err: "the glob is empty"},
		{in: "ok/*=TRAIN,x/[a-/y=EVAL", err: `pattern rule "x/[a-/y=EVAL": "[a-" is not a valid glob`},
	} {
		got, err := ParsePattern(c.in)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("ParsePattern(%q): %v", c.in, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("ParsePattern(%q) = %+v, %v; want an error with %q", c.in, got, err, c.err)
		case c.err == "" && !reflect.DeepEqual(got, c.want):
			t.Errorf("ParsePattern(%q) = %+v, want %+v", c.in, got, c.want)
		}
	}
}

func TestPatternMatch(t *testing.T) {
	for _, c := range []struct {
		glob, key string
		want      bool
	}{
		{"train/**", "train/cat/1.jpg", true},
		{"train/**", "train/1.jpg", true},
		{"train/**", "train", false},
		{"train/**", "val/train/1.jpg", false},
		{"**/val/**", "val/a.jpg", true},
		{"**/val/**", "x/y/val/z/a.jpg", true},
		{"**/val/**", "x/value/a.jpg", false},
		{"**/*.png", "a.png", true},
		{"**/*.png", "a/b/c.png", true},
		{"**/*.png", "a/b/c.jpg", false},
		{"*.png", "a/b.png", false},
		{"a/**/b", "a/b", true},
		{"a/**/b", "a/x/y/b", true},
		{"a/**/**/b", "a/x/b", true},
		{"a/*/b", "a/x/y/b", false},
		{"img/[0-4]*.jpg", "img/3a.jpg", true},
		{"img/[0-4]*.jpg", "img/5a.jpg", false},
	} {
		if got := (PatternRule{Glob: c.glob}).Match(c.key); got != c.want {
			t.Errorf("%q matches %q: %v, want %v", c.glob, c.key, got, c.want)
		}
	}
}

// dataset is n samples in classes of sizes: class i has sizes[i%len]
// samples, keys "<class>/<n>.jpg".
func dataset(n, classes int) []format.Sample {
	s := make([]format.Sample, n)
	for i := range s {
		c := fmt.Sprintf("c%d", i%classes)
		s[i] = format.Sample{Key: fmt.Sprintf("%s/%05d.jpg", c, i), Labels: []string{c}}
	}
	return s
}

func usages(samples []format.Sample) map[string]format.Usage {
	m := make(map[string]format.Usage, len(samples))
	for _, s := range samples {
		m[s.Key] = s.Usage
	}
	return m
}

func TestApplyRatios(t *testing.T) {
	for _, sp := range []Split{
		{Train: 0.8, Eval: 0.2, Seed: 1},
		{Train: 0.7, Eval: 0.2, Test: 0.1},
		{Train: 0.5, Eval: 0.25, Test: 0.25, Seed: 42},
	} {
		t.Run(sp.String(), func(t *testing.T) {
			samples := dataset(10000, 10)
			sp.Apply(samples)
			c := Count(samples).PerUsage
			for u, want := range map[string]float64{"TRAIN": sp.Train, "EVAL": sp.Eval, "TEST": sp.Test} {
				if got := float64(c[u]) / 10000; math.Abs(got-want) > 0.02 {
					t.Errorf("%s: %.4f of the samples, want %.2f±0.02", u, got, want)
				}
			}
			if c[""] != 0 {
				t.Errorf("%d samples unassigned", c[""])
			}

			// The same again: the same split.
			again := dataset(10000, 10)
			sp.Apply(again)
			if !reflect.DeepEqual(usages(again), usages(samples)) {
				t.Error("Apply is not deterministic")
			}

			// 1000 samples more, in the same classes and new ones, in
			// another order: the first 10000 keep their usages.
			more := dataset(11000, 10)
			for i := 10000; i < 11000; i += 7 {
				more[i].Labels = []string{"new"}
			}
			for i, j := 0, len(more)-1; i < j; i, j = i+1, j-1 {
				more[i], more[j] = more[j], more[i]
			}
			sp.Apply(more)
			m := usages(more)
			moved := 0
			for k, u := range usages(samples) {
				if m[k] != u {
					moved++
				}
			}
			if moved > 0 {
				t.Errorf("%d samples changed usage when samples were added", moved)
			}

			// Another seed: another split.
			other := dataset(10000, 10)
			sp.Seed++
			sp.Apply(other)
			if reflect.DeepEqual(usages(other), usages(samples)) {
				t.Error("the seed does not change the split")
			}
		})
	}
}

func TestApplyStratifies(t *testing.T) {
	// Classes of 2 and 3 samples, for several seeds: each gets a TRAIN
	// and an EVAL sample; a class of one keeps what the hash gave.
	for seed := range int64(50) {
		var samples []format.Sample
		for c := range 20 {
			for i := range 2 + c%2 {
				samples = append(samples, format.Sample{Key: fmt.Sprintf("k%d-%d-%d", seed, c, i), Labels: []string{fmt.Sprint(c)}})
			}
		}
		samples = append(samples, format.Sample{Key: "alone", Labels: []string{"alone"}}, format.Sample{Key: "unlabeled"})
		sp := Split{Train: 0.8, Eval: 0.1, Test: 0.1, Seed: seed}
		sp.Apply(samples)
		per := map[string]map[format.Usage]int{}
		for _, s := range samples {
			if s.Usage == "" {
				t.Errorf("%s unassigned", s.Key)
			}
			if c := firstLabel(&s); c != "" {
				if per[c] == nil {
					per[c] = map[format.Usage]int{}
				}
				per[c][s.Usage]++
			}
		}
		for c, n := range per {
			if c != "alone" && (n[format.Train] == 0 || n[format.Eval] == 0) {
				t.Errorf("seed %d: class %s has %v", seed, c, n)
			}
		}
	}
	// Without an EVAL share, nothing is moved to EVAL.
	samples := dataset(20, 2)
	Split{Train: 0.5, Test: 0.5}.Apply(samples)
	if n := Count(samples).PerUsage["EVAL"]; n != 0 {
		t.Errorf("%d EVAL samples without an EVAL share", n)
	}
}

func TestApplyPatterns(t *testing.T) {
	rules, err := ParsePattern("train/**=TRAIN,val/**=EVAL,**/test/*=TEST,val/x/*=TRAIN")
	if err != nil {
		t.Fatal(err)
	}
	layout := func() []format.Sample {
		return []format.Sample{
			{Key: "train/cat/1.jpg", Usage: format.Eval, Labels: []string{"cat"}},
			{Key: "val/x/2.jpg", Labels: []string{"cat"}},
			{Key: "a/test/3.jpg", Labels: []string{"cat"}},
			{Key: "other/4.jpg", Usage: format.Test, Labels: []string{"cat"}},
			{Text: "inline", Usage: format.Eval},
		}
	}
	// Patterns only: the rest keep the layout's usages.
	s := layout()
	Split{Pattern: rules}.Apply(s)
	want := []format.Usage{format.Train, format.Eval, format.Test, format.Test, format.Eval}
	for i := range s {
		if s[i].Usage != want[i] {
			t.Errorf("patterns only: %s is %q, want %q", s[i].Key, s[i].Usage, want[i])
		}
	}
	// With ratios, the rest are split by them (here all to TRAIN), and
	// pattern-given usages are not moved to stratify.
	s = layout()
	Split{Train: 1, Pattern: rules}.Apply(s)
	want = []format.Usage{format.Train, format.Eval, format.Test, format.Train, format.Train}
	for i := range s {
		if s[i].Usage != want[i] {
			t.Errorf("patterns and ratios: %s%s is %q, want %q", s[i].Key, s[i].Text, s[i].Usage, want[i])
		}
	}
	// The zero split keeps the layout's usages.
	s = layout()
	Split{Seed: 5}.Apply(s)
	if !reflect.DeepEqual(s, layout()) {
		t.Errorf("the zero split changed %+v", s)
	}
}

// FuzzParseSplit: ParseSplit does not panic, and what it reads has ratios
// in [0, 1] that add up to 1 and reads back from its String.
func FuzzParseSplit(f *testing.F) {
	for _, s := range []string{"train=0.8,seed=1", "train=0.7,eval=0.2,test=0.1", "val=20%", "seed=1", "train=,", "x", "test=1e-9,train=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sp, err := ParseSplit(s)
		if err != nil || sp.IsZero() {
			return
		}
		for _, r := range []float64{sp.Train, sp.Eval, sp.Test} {
			if r < 0 || r > 1 {
				t.Fatalf("ParseSplit(%q) = %+v", s, sp)
			}
		}
		if sum := sp.Train + sp.Eval + sp.Test; math.Abs(sum-1) > 1e-6 {
			t.Fatalf("ParseSplit(%q) = %+v adds up to %v", s, sp, sum)
		}
		back, err := ParseSplit(sp.String())
		if err != nil || !reflect.DeepEqual(back, sp) {
			t.Fatalf("ParseSplit(%q) = %+v, %v; want %+v", sp.String(), back, err, sp)
		}
		_, _ = ParsePattern(s)
	})
}
