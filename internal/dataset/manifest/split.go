package manifest

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/atelier-dev/atelier/internal/dataset/format"
	"github.com/atelier-dev/atelier/internal/text"
)

// Split says how a version's samples are put in TRAIN, EVAL and TEST:
// by the key patterns first (the first rule that matches wins), then by
// the ratios. The zero Split keeps the usages the layout gave.
type Split struct {
	// Train, Eval and Test are the shares of the samples the patterns
	// leave; they add up to 1 (all 0: no ratio split).
	Train, Eval, Test float64
	// Seed picks one of the many splits with these ratios.
	Seed int64
	// Pattern are rules on the keys, tried in order.
	Pattern []PatternRule
}

// PatternRule puts the samples whose keys match Glob in Usage. Glob is
// matched against the whole key like path.Match, element by element,
// where an element "**" matches any number of elements (at least one at
// the end: "train/**" matches every key below train/).
type PatternRule struct {
	Glob  string
	Usage format.Usage
}

// IsZero reports whether sp changes nothing: no ratios, no patterns.
func (sp Split) IsZero() bool {
	return sp.Train <= 0 && sp.Eval <= 0 && sp.Test <= 0 && len(sp.Pattern) == 0
}

// String is sp's ratios and seed as ParseSplit reads them
// ("train=0.8,eval=0.2,test=0,seed=1"), or "" for no ratios.
func (sp Split) String() string {
	if sp.Train <= 0 && sp.Eval <= 0 && sp.Test <= 0 {
		return ""
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	s := "train=" + f(sp.Train) + ",eval=" + f(sp.Eval) + ",test=" + f(sp.Test)
	if sp.Seed != 0 {
		s += ",seed=" + strconv.FormatInt(sp.Seed, 10)
	}
	return s
}

// ParseSplit reads ratios and a seed: comma-separated NAME=VALUE parts,
// NAME one of train, eval (or val), test and seed, a ratio written 0.8
// or 80%. The ratios not given share the rest: "train=0.8" is 0.2 EVAL,
// "train=0.7,eval=0.2" is 0.1 TEST; given all three, they must add up to
// 1. "" is the zero Split. Errors name the part that is wrong.
func ParseSplit(s string) (Split, error) {
	var sp Split
	if strings.TrimSpace(s) == "" {
		return sp, nil
	}
	var given [3]bool // train, eval, test
	seed := false
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		bad := func(format string, a ...any) (Split, error) {
			return Split{}, fmt.Errorf("split part %q: %s", text.Clip(part, 60), fmt.Sprintf(format, a...))
		}
		name, value, ok := strings.Cut(part, "=")
		if !ok {
			return bad("want NAME=VALUE (train=0.8, eval=0.2, test=0.1, seed=1)")
		}
		name, value = strings.ToLower(strings.TrimSpace(name)), strings.TrimSpace(value)
		if name == "seed" {
			if seed {
				return bad("the seed is given twice")
			}
			n, err := strconv.ParseInt(value, 10, 64)
			if err != nil {
				return bad("the seed %q is not an integer", text.Clip(value, 30))
			}
			sp.Seed, seed = n, true
			continue
		}
		i := slices.Index([]string{"train", "eval", "test"}, name)
		if name == "val" || name == "validation" {
			i = 1
		}
		if i < 0 {
			return bad("%q is not train, eval, test or seed", text.Clip(name, 30))
		}
		if given[i] {
			return bad("the %s ratio is given twice", name)
		}
		r, err := parseRatio(value)
		if err != nil {
			return bad("%v", err)
		}
		given[i] = true
		ratios := [...]*float64{&sp.Train, &sp.Eval, &sp.Test}
		*ratios[i] = r
	}
	n := 0
	for _, g := range given {
		if g {
			n++
		}
	}
	sum := sp.Train + sp.Eval + sp.Test
	switch {
	case n == 0:
		return Split{}, fmt.Errorf("split %q gives no ratio (write train=0.8, say)", text.Clip(s, 60))
	case n == 3 && math.Abs(sum-1) > 1e-6:
		return Split{}, fmt.Errorf("split %q: the ratios add up to %s, not 1", text.Clip(s, 60), strconv.FormatFloat(math.Round(sum*1e6)/1e6, 'f', -1, 64))
	case sum > 1+1e-6:
		return Split{}, fmt.Errorf("split %q: the ratios add up to %s, more than 1", text.Clip(s, 60), strconv.FormatFloat(math.Round(sum*1e6)/1e6, 'f', -1, 64))
	}
	rest := max(0, math.Round((1-sum)*1e9)/1e9)
	switch {
	case n == 3:
	case !given[1] && !given[2]: // train=R: the rest is EVAL
		sp.Eval = rest
	case !given[0]:
		sp.Train = rest
	case !given[2]:
		sp.Test = rest
	default:
		sp.Eval = rest
	}
	return sp, nil
}

// parseRatio reads 0.8 or 80%.
func parseRatio(v string) (float64, error) {
	num, pct := strings.CutSuffix(v, "%")
	r, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || math.IsNaN(r) || math.IsInf(r, 0) {
		return 0, fmt.Errorf("%q is not a ratio (write 0.8 or 80%%)", text.Clip(v, 30))
	}
	if pct {
		r /= 100
	}
	if r < 0 || r > 1 {
		return 0, fmt.Errorf("%q is not between 0 and 1 (0%% and 100%%)", text.Clip(v, 30))
	}
	return r, nil
}

// ParsePattern reads comma-separated GLOB=USAGE rules, USAGE one of
// TRAIN, EVAL (or VAL) and TEST in any case:
// "train/**=TRAIN,val/**=EVAL,test/**=TEST". Errors name the rule that
// is wrong.
func ParsePattern(s string) ([]PatternRule, error) {
	var rules []PatternRule
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		bad := func(format string, a ...any) ([]PatternRule, error) {
			return nil, fmt.Errorf("pattern rule %q: %s", text.Clip(part, 60), fmt.Sprintf(format, a...))
		}
		i := strings.LastIndexByte(part, '=')
		if i < 0 {
			return bad("want GLOB=USAGE (train/**=TRAIN)")
		}
		glob, usage := strings.TrimSpace(part[:i]), strings.TrimSpace(part[i+1:])
		u, ok := parseUsage(usage)
		if !ok {
			return bad("%q is not TRAIN, EVAL or TEST", text.Clip(usage, 30))
		}
		if glob == "" {
			return bad("the glob is empty")
		}
		for e := range strings.SplitSeq(glob, "/") {
			if _, err := path.Match(e, ""); err != nil {
				return bad("%q is not a valid glob", text.Clip(e, 30))
			}
		}
		rules = append(rules, PatternRule{Glob: glob, Usage: u})
	}
	return rules, nil
}

// parseUsage reads a usage in any case; VAL and VALIDATION are EVAL.
func parseUsage(s string) (format.Usage, bool) {
	switch strings.ToUpper(s) {
	case "TRAIN":
		return format.Train, true
	case "EVAL", "VAL", "VALIDATION":
		return format.Eval, true
	case "TEST":
		return format.Test, true
	}
	return "", false
}

// Match reports whether key matches the rule's glob.
func (r PatternRule) Match(key string) bool {
	return matchElems(strings.Split(r.Glob, "/"), strings.Split(key, "/"))
}

func matchElems(p, k []string) bool {
	for len(p) > 0 {
		if p[0] == "**" {
			for len(p) > 0 && p[0] == "**" {
				p = p[1:]
			}
			if len(p) == 0 {
				return len(k) > 0
			}
			for i := range len(k) + 1 {
				if matchElems(p, k[i:]) {
					return true
				}
			}
			return false
		}
		if len(k) == 0 {
			return false
		}
		if ok, _ := path.Match(p[0], k[0]); !ok {
			return false
		}
		p, k = p[1:], k[1:]
	}
	return len(k) == 0
}

// Apply sets the samples' usages. A sample whose key matches a pattern
// rule gets the first matching rule's usage. With ratios, every other
// sample gets one by a hash of the seed and its key (its text for inline
// content), so the split is the same on every run and a sample keeps its
// usage when samples are added. The ratios are then held per class
// (the sample's first label): when Train and Eval are both above 0,
// every class of two samples or more gets at least one TRAIN and one
// EVAL sample, moving the one whose hash is nearest the other side (in a
// class that needed it, adding samples may move it back). Without
// ratios, the samples no rule matches keep the usage the layout gave.
func (sp Split) Apply(samples []format.Sample) {
	if sp.IsZero() {
		return
	}
	t, e, x := max(sp.Train, 0), max(sp.Eval, 0), max(sp.Test, 0)
	ratios := t+e+x > 0
	if ratios {
		sum := t + e + x
		t, e, x = t/sum, e/sum, x/sum
	}
	var seed [8]byte
	binary.BigEndian.PutUint64(seed[:], uint64(sp.Seed))
	hashed := make(map[int]float64) // sample index → its hash in [0, 1)
	classes := map[string][]int{}
	for i := range samples {
		s := &samples[i]
		if c := firstLabel(s); c != "" {
			classes[c] = append(classes[c], i)
		}
		if s.Key != "" {
			if j := slices.IndexFunc(sp.Pattern, func(r PatternRule) bool { return r.Match(s.Key) }); j >= 0 {
				s.Usage = sp.Pattern[j].Usage
				continue
			}
		}
		if !ratios {
			continue
		}
		u := unit(seed, s)
		hashed[i] = u
		switch {
		case u < t || e <= 0 && x <= 0:
			s.Usage = format.Train
		case u < t+e || x <= 0:
			s.Usage = format.Eval
		default:
			s.Usage = format.Test
		}
	}
	if t <= 0 || e <= 0 {
		return
	}
	for _, members := range classes {
		if len(members) < 2 {
			continue
		}
		count := func(u format.Usage) int {
			n := 0
			for _, i := range members {
				if samples[i].Usage == u {
					n++
				}
			}
			return n
		}
		// move gives the sample of a usage in from that the hash puts
		// nearest to, lowest first (or highest), usage to.
		move := func(to format.Usage, from format.Usage, highest bool) bool {
			best := -1
			for _, i := range members {
				u, ok := hashed[i]
				if !ok || samples[i].Usage != from {
					continue
				}
				if best < 0 || (highest && u > hashed[best]) || (!highest && u < hashed[best]) {
					best = i
				}
			}
			if best < 0 {
				return false
			}
			samples[best].Usage = to
			return true
		}
		if count(format.Train) == 0 {
			_ = move(format.Train, format.Test, false) || count(format.Eval) >= 2 && move(format.Train, format.Eval, false)
		}
		if count(format.Eval) == 0 {
			_ = move(format.Eval, format.Test, false) || count(format.Train) >= 2 && move(format.Eval, format.Train, true)
		}
	}
}

// firstLabel is the class a sample is stratified by: its first label,
// else its first box's, else "".
func firstLabel(s *format.Sample) string {
	if len(s.Labels) > 0 {
		return s.Labels[0]
	}
	if len(s.Boxes) > 0 {
		return s.Boxes[0].Label
	}
	return ""
}

// unit is a sample's hash under a seed, uniform in [0, 1).
func unit(seed [8]byte, s *format.Sample) float64 {
	h := sha256.New()
	h.Write(seed[:])
	h.Write([]byte(cmp.Or(s.Key, s.Text)))
	var sum [sha256.Size]byte
	return float64(binary.BigEndian.Uint64(h.Sum(sum[:0]))>>11) / (1 << 53)
}
