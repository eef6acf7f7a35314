package format

import (
	"bytes"
	"context"
	"encoding/binary"
	"strings"
	"sync/atomic"
	"testing"
)

func TestImageExt(t *testing.T) {
	for key, want := range map[string]bool{
		"a.jpg": true, "a/b.JPEG": true, "x.Png": true, "y.bmp": true, "z.GIF": true, "w.webp": true,
		"a.tif": false, "a.jpg.txt": false, "jpg": false, "a.jpg/b": false, "": false, "a.": false,
	} {
		if got := ImageExt(key); got != want {
			t.Errorf("ImageExt(%q) = %v, want %v", key, got, want)
		}
	}
}

// jpegWithApp inserts n bytes of APP1 segments after a JPEG's SOI, so
// that its frame header lies further in.
func jpegWithApp(j []byte, n int) []byte {
	out := append([]byte{}, j[:2]...)
	for n > 0 {
		l := min(n, 65533)
		out = append(out, 0xFF, 0xE1)
		out = binary.BigEndian.AppendUint16(out, uint16(l+2))
		out = append(out, bytes.Repeat([]byte{'x'}, l)...)
		n -= l
	}
	return append(out, j[2:]...)
}

// jpegBeforeSOF is a JPEG cut just before its first SOF marker.
func jpegBeforeSOF(j []byte) []byte {
	for i := 2; i+1 < len(j); i++ {
		if j[i] == 0xFF && isSOF(j[i+1]) {
			return j[:i]
		}
	}
	panic("no SOF")
}

func TestCheckImage(t *testing.T) {
	j := jpegOf(7, 5, 1)
	p := pngOf(7, 5, 1)
	vp8 := []byte("RIFF\x00\x00\x00\x00WEBPVP8 \x00\x00\x00\x00\x00\x00\x00\x9d\x01\x2a\x07\x00\x05\x00rest")
	binary.LittleEndian.PutUint32(vp8[4:], uint32(len(vp8)-8))
	vp8x := []byte("RIFF\x00\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00\x00\x00\x00\x00\x06\x00\x00\x04\x00\x00")
	binary.LittleEndian.PutUint32(vp8x[4:], uint32(len(vp8x)-8))
	for _, c := range []struct {
		name    string
		head    []byte
		size    int64
		format  string
		w, h    int
		rule    string
		message string
	}{
		{name: "jpeg", head: j, size: int64(len(j)), format: "JPEG", w: 7, h: 5},
		{name: "jpeg head of a longer file", head: j[:len(j)-10], size: int64(len(j)) + 1000, format: "JPEG", w: 7, h: 5},
		{name: "jpeg ends before SOF", head: jpegBeforeSOF(j), size: int64(len(jpegBeforeSOF(j))), format: "JPEG", rule: RuleImageTruncated,
			message: "is a JPEG image that ends after"},
		{name: "jpeg cut in its scan", head: j[:len(j)-20], size: int64(len(j) - 20), format: "JPEG", rule: RuleImageTruncated,
			message: "without an end-of-image marker"},
		{name: "jpeg EOI first", head: []byte{0xFF, 0xD8, 0xFF, 0xD9}, size: 4, format: "JPEG", rule: RuleImageUnreadable},
		{name: "jpeg garbage", head: []byte{0xFF, 0xD8, 0x00, 0x01, 0x02}, size: 5, format: "JPEG", rule: RuleImageUnreadable},
		{name: "png", head: p, size: int64(len(p)), format: "PNG", w: 7, h: 5},
		{name: "png under 57 bytes", head: p[:40], size: 40, format: "PNG", rule: RuleImageTruncated, message: "the smallest PNG"},
		{name: "png without IEND", head: p[:len(p)-12], size: int64(len(p) - 12), format: "PNG", rule: RuleImageTruncated, message: "IEND"},
		{name: "png signature only", head: p[:8], size: 8, format: "PNG", rule: RuleImageTruncated},
		{name: "png bad IHDR", head: append(append([]byte{}, p[:12]...), "IDAT\x00\x00\x00\x01\x00\x00\x00\x01"...), size: 1000, format: "PNG", rule: RuleImageUnreadable},
		{name: "gif", head: gifOf(7, 5, 1), size: int64(len(gifOf(7, 5, 1))), format: "GIF", w: 7, h: 5},
		{name: "gif without trailer", head: gifOf(7, 5, 1)[:20], size: 20, format: "GIF", rule: RuleImageTruncated},
		{name: "bmp", head: bmpOf(7, 5, 1), size: int64(len(bmpOf(7, 5, 1))), format: "BMP", w: 7, h: 5},
		{name: "bmp shorter than its header says", head: bmpOf(7, 5, 1)[:60], size: 60, format: "BMP", rule: RuleImageTruncated},
		{name: "webp lossless", head: webpOf(7, 5, 1), size: int64(len(webpOf(7, 5, 1))), format: "WebP", w: 7, h: 5},
		{name: "webp lossy", head: vp8, size: int64(len(vp8)), format: "WebP", w: 7, h: 5},
		{name: "webp extended", head: vp8x, size: int64(len(vp8x)), format: "WebP", w: 7, h: 5},
		{name: "webp truncated", head: webpOf(7, 5, 1)[:32], size: 32, format: "WebP", rule: RuleImageTruncated},
		{name: "html", head: []byte("<!DOCTYPE html><html>"), size: 21, rule: RuleImageUnreadable, message: "it starts with 3c 21 44 4f 43 54 59 50"},
		{name: "one byte", head: []byte{0xFF}, size: 1, rule: RuleImageUnreadable},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := checkImage(c.head, c.size)
			if h.Format != c.format || h.Rule != c.rule {
				t.Fatalf("checkImage = %+v, want format %q rule %q", h, c.format, c.rule)
			}
			if c.rule == "" && (h.Width != c.w || h.Height != c.h) {
				t.Errorf("size %d×%d, want %d×%d", h.Width, h.Height, c.w, c.h)
			}
			if c.rule != "" && !strings.Contains(h.Msg, c.message) {
				t.Errorf("message %q does not contain %q", h.Msg, c.message)
			}
		})
	}
}

// A JPEG whose frame header is beyond ImageHeadBytes is read again,
// further; one whose head is whole is never read twice.
func TestReadImageFarSOF(t *testing.T) {
	far := jpegWithApp(jpegOf(9, 4, 2), 3*ImageHeadBytes)
	near := jpegOf(9, 4, 3)
	src := memSource(map[string][]byte{"far.jpg": far, "near.jpg": near})
	var calls, most atomic.Int64
	src = counting(src, &calls, &most)
	for key, wantCalls := range map[string]int64{"far.jpg": 2, "near.jpg": 1} {
		calls.Store(0)
		r, err := readImage(context.Background(), src.ReadHead, key, sizeOf(src, key))
		if err != nil || r.bad || r.width != 9 || r.height != 4 {
			t.Errorf("%s: readImage = %+v, %v", key, r, err)
		}
		if calls.Load() != wantCalls {
			t.Errorf("%s: %d ReadHead calls, want %d", key, calls.Load(), wantCalls)
		}
	}
	if most.Load() > jpegHeadMax {
		t.Errorf("ReadHead asked for %d bytes, more than %d", most.Load(), jpegHeadMax)
	}
}

func sizeOf(src Source, key string) int64 {
	for _, o := range src.Objects {
		if o.Key == key {
			return o.Size
		}
	}
	return -1
}

// The image rules, through Parse: each bad image is an error about it,
// and its sample is left out.
func TestParseImageRules(t *testing.T) {
	good := tree{"cat/a.jpg": jpegOf(8, 6, 1), "dog/b.png": pngOf(8, 6, 2)}
	j := jpegOf(8, 6, 3)
	for _, c := range []struct {
		name, key string
		data      []byte
		rule      string
		sev       Severity
		message   string
	}{
		{"empty", "cat/empty.jpg", []byte{}, RuleImageEmpty, Error, "the image is empty (0 bytes)"},
		{"html", "cat/page.jpg", []byte("<html><body>404</body></html>"), RuleImageUnreadable, Error,
			"the file is not a JPEG, PNG, BMP, GIF or WebP image: it starts with 3c 68 74 6d 6c 3e 3c 62"},
		{"truncated png", "dog/cut.png", pngOf(8, 6, 4)[:50], RuleImageTruncated, Error,
			"the file is a PNG of 50 bytes: the smallest PNG (signature, IHDR, IDAT, IEND) has 57"},
		{"jpeg before SOF", "dog/cut.jpg", jpegBeforeSOF(j), RuleImageTruncated, Error, ""},
		{"png named jpg", "dog/c.jpg", pngOf(8, 6, 5), RuleImageExtension, Warning,
			"the file is named like a JPEG image but its header is a PNG one"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, fs := parse(t, ImageFolder, good.with(c.key, c.data), Options{})
			f := findAt(t, fs, c.rule, c.key)
			if f.Severity != c.sev {
				t.Errorf("severity %s, want %s", f.Severity, c.sev)
			}
			if c.message != "" && f.Message != c.message {
				t.Errorf("message %q\nwant    %q", f.Message, c.message)
			}
			kept := false
			for _, s := range p.Samples {
				kept = kept || s.Key == c.key
			}
			if kept != (c.sev == Warning) {
				t.Errorf("sample kept: %v", kept)
			}
		})
	}
}
