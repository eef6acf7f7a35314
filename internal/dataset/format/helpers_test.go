package format

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// memSource is a Source over files in memory; ETags are hex MD5s.
func memSource(files map[string][]byte) Source {
	objs := make([]Object, 0, len(files))
	for k, b := range files {
		sum := md5.Sum(b)
		objs = append(objs, Object{Key: k, Size: int64(len(b)), ETag: hex.EncodeToString(sum[:])})
	}
	slices.SortFunc(objs, func(a, b Object) int { return strings.Compare(a.Key, b.Key) })
	return Source{Objects: objs, ReadHead: func(ctx context.Context, key string, n int64) ([]byte, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		b, ok := files[key]
		if !ok {
			return nil, fmt.Errorf("no object %q", key)
		}
		return b[:min(int64(len(b)), n)], nil
	}}
}

// counting wraps src's ReadHead to count calls and the largest n asked.
func counting(src Source, calls, most *atomic.Int64) Source {
	read := src.ReadHead
	src.ReadHead = func(ctx context.Context, key string, n int64) ([]byte, error) {
		calls.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		return read(ctx, key, n)
	}
	return src
}

// img is a w×h image whose pixels depend on seed (so that two seeds give
// different files).
func img(w, h, seed int) image.Image {
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			m.Set(x, y, color.RGBA{uint8(seed * 37), uint8(seed*11 + x), uint8(seed*3 + y), 255})
		}
	}
	return m
}

func jpegOf(w, h, seed int) []byte {
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img(w, h, seed), &jpeg.Options{Quality: 90}); err != nil {
		panic(err)
	}
	return b.Bytes()
}

func pngOf(w, h, seed int) []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, img(w, h, seed)); err != nil {
		panic(err)
	}
	return b.Bytes()
}

func gifOf(w, h, seed int) []byte {
	var b bytes.Buffer
	if err := gif.Encode(&b, img(w, h, seed), nil); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// bmpOf is a 24-bit BMP (BITMAPINFOHEADER), written by hand.
func bmpOf(w, h, seed int) []byte {
	row := (w*3 + 3) &^ 3
	size := 54 + row*h
	b := make([]byte, size)
	copy(b, "BM")
	binary.LittleEndian.PutUint32(b[2:], uint32(size))
	binary.LittleEndian.PutUint32(b[10:], 54)
	binary.LittleEndian.PutUint32(b[14:], 40)
	binary.LittleEndian.PutUint32(b[18:], uint32(w))
	binary.LittleEndian.PutUint32(b[22:], uint32(h))
	binary.LittleEndian.PutUint16(b[26:], 1)
	binary.LittleEndian.PutUint16(b[28:], 24)
	for i := 54; i < size; i++ {
		b[i] = byte(seed + i)
	}
	return b
}

// webpOf is a lossless WebP header (VP8L) with a made-up bitstream.
func webpOf(w, h, seed int) []byte {
	body := make([]byte, 5, 40)
	body[0] = 0x2F
	binary.LittleEndian.PutUint32(body[1:], uint32(w-1)|uint32(h-1)<<14)
	for i := range 20 {
		body = append(body, byte(seed+i))
	}
	chunk := append([]byte("VP8L"), binary.LittleEndian.AppendUint32(nil, uint32(len(body)))...)
	chunk = append(chunk, body...)
	out := append([]byte("RIFF"), binary.LittleEndian.AppendUint32(nil, uint32(4+len(chunk)))...)
	out = append(out, "WEBP"...)
	return append(out, chunk...)
}

// parse runs Parse and fails the test on an error.
func parse(t testing.TB, f Format, files map[string][]byte, opt Options) (*Parsed, []Finding) {
	t.Helper()
	p, fs, err := Parse(context.Background(), f, memSource(files), opt)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	for _, x := range fs {
		if x.Message == "" || x.Rule == "" || x.Severity == "" {
			t.Errorf("finding without message, rule or severity: %+v", x)
		}
		if x.Hint == "" {
			t.Errorf("finding without hint: %v", x)
		}
	}
	return p, fs
}

// find is the first finding of rule (fails the test when there is none).
func find(t testing.TB, fs []Finding, rule string) Finding {
	t.Helper()
	for _, f := range fs {
		if f.Rule == rule {
			return f
		}
	}
	t.Fatalf("no %s finding in:\n%s", rule, dump(fs))
	return Finding{}
}

// findAt is the finding of rule about obj.
func findAt(t testing.TB, fs []Finding, rule, obj string) Finding {
	t.Helper()
	for _, f := range fs {
		if f.Rule == rule && f.Object == obj {
			return f
		}
	}
	t.Fatalf("no %s finding about %s in:\n%s", rule, obj, dump(fs))
	return Finding{}
}

// rules are the findings' rules, sorted and deduplicated.
func rules(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Rule)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// noErrors fails the test on any error finding.
func noErrors(t testing.TB, fs []Finding) {
	t.Helper()
	for _, f := range fs {
		if f.Severity == Error {
			t.Errorf("unexpected error finding: %v\n%s", f, f.Layout)
		}
	}
}

func dump(fs []Finding) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString("  " + f.String() + "\n")
	}
	return b.String()
}

// sample is the sample of key.
func sample(t testing.TB, p *Parsed, key string) Sample {
	t.Helper()
	for _, s := range p.Samples {
		if s.Key == key {
			return s
		}
	}
	t.Fatalf("no sample %s among %d", key, len(p.Samples))
	return Sample{}
}

// keys are the samples' keys.
func keys(p *Parsed) []string {
	var out []string
	for _, s := range p.Samples {
		out = append(out, s.Key)
	}
	return out
}

// tree builds files from key → content pairs.
type tree map[string][]byte

// with is a copy of t with more files.
func (t tree) with(kv ...any) tree {
	out := tree{}
	for k, v := range t {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		switch v := kv[i+1].(type) {
		case string:
			out[kv[i].(string)] = []byte(v)
		case []byte:
			out[kv[i].(string)] = v
		}
	}
	return out
}

// T is a tree of key, content pairs (content a string or []byte).
func T(kv ...any) tree { return tree{}.with(kv...) }
