package format

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// bigFolder is an imagefolder source of n JPEGs in 100 classes and two
// splits, in memory: every object shares one small JPEG's bytes, with
// its own ETag.
func bigFolder(n int) Source {
	jpg := jpegOf(32, 24, 1)
	objs := make([]Object, n)
	for i := range objs {
		split := "train"
		if i%7 == 0 {
			split = "val"
		}
		objs[i] = Object{Key: fmt.Sprintf("%s/c%02d/%07d.jpg", split, i%100, i), Size: int64(len(jpg)), ETag: fmt.Sprintf("%032x", i)}
	}
	return Source{Objects: objs, ReadHead: func(ctx context.Context, key string, n int64) ([]byte, error) {
		return jpg[:min(n, int64(len(jpg)))], nil
	}}
}

func BenchmarkParse100k(b *testing.B) {
	src := bigFolder(100_000)
	b.ReportAllocs()
	for b.Loop() {
		p, fs, err := Parse(context.Background(), Auto, src, Options{})
		if err != nil || len(p.Samples) != 100_000 || len(fs) != 0 {
			b.Fatalf("%v samples, %d findings, %v", len(p.Samples), len(fs), err)
		}
	}
}

// Parse of 100,000 images (and Detect on them) takes well under two
// seconds.
func TestParse100k(t *testing.T) {
	n := 100_000
	if raceEnabled || testing.Short() {
		n = 20_000
	}
	src := bigFolder(n)
	start := time.Now()
	d := Detect(src.Objects)
	p, fs, err := Parse(context.Background(), Auto, src, Options{})
	took := time.Since(start)
	if err != nil || d.Format != ImageFolder || len(p.Samples) != n || len(p.Classes) != 100 || len(fs) != 0 {
		t.Fatalf("detect %+v, %d samples, %d classes, %d findings, %v", d, len(p.Samples), len(p.Classes), len(fs), err)
	}
	if s := p.Samples[0]; s.Width != 32 || s.Height != 24 || s.Usage != Train {
		t.Errorf("first sample %+v", s)
	}
	// Speed is BenchmarkParse100k's and bench/datasets' to judge: a
	// shared machine makes a timed assertion flaky.
	t.Logf("Detect and Parse of %d objects: %v", n, took)
}
