package format

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"path"
	"strings"
	"sync"
	"sync/atomic"
)

// ImageHeadBytes is how much of each image Parse reads to check its
// header and learn its size. A JPEG whose frame header lies further in
// (behind a large EXIF thumbnail) is read again, up to 1 MiB.
const ImageHeadBytes = 64 << 10

// jpegHeadMax is the most Parse reads of a JPEG looking for its frame
// header.
const jpegHeadMax = 1 << 20

// workers is how many ReadHead calls Parse makes at once.
const workers = 16

// imageExts are the extensions of the images Parse reads, and the
// header format each names.
var imageExts = map[string]string{
	".jpg": "JPEG", ".jpeg": "JPEG", ".png": "PNG", ".bmp": "BMP", ".gif": "GIF", ".webp": "WebP",
}

// unsupportedExts are image formats Parse recognises but does not read.
var unsupportedExts = map[string]bool{
	".tif": true, ".tiff": true, ".heic": true, ".heif": true, ".avif": true, ".svg": true,
	".ico": true, ".jp2": true, ".psd": true, ".dng": true, ".cr2": true, ".nef": true,
}

// ImageExt reports whether key names an image Parse reads: .jpg, .jpeg,
// .png, .bmp, .gif or .webp, in any case.
func ImageExt(key string) bool {
	_, ok := imageExts[lowerExt(key)]
	return ok
}

// lowerExt is key's extension ("" for none), lower-cased.
func lowerExt(key string) string {
	i := strings.LastIndexByte(key, '.')
	if i < 0 || strings.IndexByte(key[i:], '/') >= 0 {
		return ""
	}
	ext := key[i:]
	for j := 0; j < len(ext); j++ {
		if 'A' <= ext[j] && ext[j] <= 'Z' {
			return strings.ToLower(ext)
		}
	}
	return ext
}

// header is what an image's first bytes say.
type header struct {
	// Format is "JPEG", "PNG", "BMP", "GIF" or "WebP" ("" when the head
	// is none of them).
	Format        string
	Width, Height int
	// Rule and Msg say what is wrong (RuleImageUnreadable,
	// RuleImageTruncated), or Rule is "".
	Rule, Msg string
	// More: the head ended before the size, and the object is longer.
	More bool
}

// checkImage reads the header at the start of an object of size bytes
// (head is its first bytes: the whole object when len(head) >= size).
// It never panics, whatever head holds.
func checkImage(head []byte, size int64) header {
	complete := int64(len(head)) >= size
	var h header
	switch {
	case len(head) >= 2 && head[0] == 0xFF && head[1] == 0xD8:
		h = jpegHeader(head, complete)
	case len(head) >= 8 && bytes.Equal(head[:8], pngSig):
		h = pngHeader(head, size, complete)
	case len(head) >= 2 && head[0] == 'B' && head[1] == 'M':
		h = bmpHeader(head, size)
	case len(head) >= 6 && (string(head[:6]) == "GIF87a" || string(head[:6]) == "GIF89a"):
		h = gifHeader(head, size, complete)
	case len(head) >= 12 && string(head[:4]) == "RIFF" && string(head[8:12]) == "WEBP":
		h = webpHeader(head, size)
	default:
		n := min(len(head), 8)
		return header{Rule: RuleImageUnreadable,
			Msg: fmt.Sprintf("is not a JPEG, PNG, BMP, GIF or WebP image: it starts with %s", hexBytes(head[:n]))}
	}
	if h.Rule == "" && h.More && complete {
		// The object ends where the header needed more.
		h.More = false
		h.Rule = RuleImageTruncated
		h.Msg = fmt.Sprintf("is a %s image that ends after %d bytes, inside its header", h.Format, len(head))
	}
	return h
}

// hexBytes is b as "ff d8 00" ("nothing" when empty).
func hexBytes(b []byte) string {
	if len(b) == 0 {
		return "nothing"
	}
	s := hex.EncodeToString(b)
	var out strings.Builder
	for i := 0; i < len(s); i += 2 {
		if i > 0 {
			out.WriteByte(' ')
		}
		out.WriteString(s[i : i+2])
	}
	return out.String()
}

// jpegHeader walks the segments of a JPEG to its frame header (SOFn);
// when b is the whole file (complete), an end-of-image marker must
// follow.
func jpegHeader(b []byte, complete bool) header {
	h := header{Format: "JPEG"}
	bad := func(format string, args ...any) header {
		h.Rule, h.Msg = RuleImageUnreadable, "is not a readable JPEG: "+fmt.Sprintf(format, args...)
		return h
	}
	i := 2
	for {
		if i >= len(b) {
			h.More = true
			return h
		}
		if b[i] != 0xFF {
			return bad("byte %d is %#02x where a marker should start", i, b[i])
		}
		for i < len(b) && b[i] == 0xFF {
			i++
		}
		if i >= len(b) {
			h.More = true
			return h
		}
		m := b[i]
		i++
		switch {
		case m == 0x01 || 0xD0 <= m && m <= 0xD7:
			continue // markers without a length
		case m == 0xD8:
			return bad("a second start-of-image marker at byte %d", i-2)
		case m == 0xD9:
			return bad("the image ends (EOI) at byte %d before its frame header", i-2)
		case m == 0xDA:
			return bad("the scan starts at byte %d before the frame header", i-2)
		case m == 0x00:
			return bad("an invalid marker ff 00 at byte %d", i-2)
		}
		if i+2 > len(b) {
			h.More = true
			return h
		}
		n := int(binary.BigEndian.Uint16(b[i:]))
		if n < 2 {
			return bad("segment %#02x at byte %d has length %d", m, i-2, n)
		}
		if isSOF(m) {
			if i+7 > len(b) {
				h.More = true
				return h
			}
			h.Height = int(binary.BigEndian.Uint16(b[i+3:]))
			h.Width = int(binary.BigEndian.Uint16(b[i+5:]))
			if h.Width == 0 {
				return bad("the frame header gives a width of 0")
			}
			// Height 0 is legal (a DNL segment sets it later): unknown.
			if complete && bytes.LastIndex(b[i:], []byte{0xFF, 0xD9}) < 0 {
				h.Rule, h.Msg = RuleImageTruncated, fmt.Sprintf("is a JPEG of %d bytes that ends without an end-of-image marker (ff d9)", len(b))
			}
			return h
		}
		i += n
	}
}

// isSOF reports whether m is a start-of-frame marker (SOF0–SOF15 but
// DHT, JPG and DAC).
func isSOF(m byte) bool {
	return 0xC0 <= m && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC
}

var pngSig = []byte{0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'}

// pngMin is the smallest PNG: signature, IHDR, an empty IDAT and IEND.
const pngMin = 8 + 25 + 12 + 12

func pngHeader(b []byte, size int64, complete bool) header {
	h := header{Format: "PNG"}
	if len(b) < 24 {
		h.More = true
		return h
	}
	if binary.BigEndian.Uint32(b[8:]) != 13 || string(b[12:16]) != "IHDR" {
		h.Rule, h.Msg = RuleImageUnreadable, "is not a readable PNG: its first chunk is not a 13-byte IHDR"
		return h
	}
	h.Width, h.Height = int(binary.BigEndian.Uint32(b[16:])), int(binary.BigEndian.Uint32(b[20:]))
	switch {
	case h.Width == 0 || h.Height == 0 || h.Width > 1<<31-1 || h.Height > 1<<31-1:
		h.Rule, h.Msg = RuleImageUnreadable, fmt.Sprintf("is not a readable PNG: its IHDR gives a size of %d×%d", h.Width, h.Height)
	case size < pngMin:
		h.Rule, h.Msg = RuleImageTruncated, fmt.Sprintf("is a PNG of %d bytes: the smallest PNG (signature, IHDR, IDAT, IEND) has %d", size, pngMin)
	case complete && !bytes.Contains(b[max(0, len(b)-64):], []byte("IEND")):
		h.Rule, h.Msg = RuleImageTruncated, fmt.Sprintf("is a PNG of %d bytes that does not end with an IEND chunk", len(b))
	}
	return h
}

func bmpHeader(b []byte, size int64) header {
	h := header{Format: "BMP"}
	if len(b) < 18 {
		h.More = true
		return h
	}
	fileSize := int64(binary.LittleEndian.Uint32(b[2:]))
	offset := int64(binary.LittleEndian.Uint32(b[10:]))
	dib := binary.LittleEndian.Uint32(b[14:])
	switch {
	case dib == 12:
		if len(b) < 22 {
			h.More = true
			return h
		}
		h.Width, h.Height = int(binary.LittleEndian.Uint16(b[18:])), int(binary.LittleEndian.Uint16(b[20:]))
	case dib >= 40 && dib <= 124:
		if len(b) < 26 {
			h.More = true
			return h
		}
		w, ht := int64(int32(binary.LittleEndian.Uint32(b[18:]))), int64(int32(binary.LittleEndian.Uint32(b[22:])))
		h.Width, h.Height = int(abs(w)), int(abs(ht))
	default:
		h.Rule, h.Msg = RuleImageUnreadable, fmt.Sprintf("is not a readable BMP: its info header has %d bytes", dib)
		return h
	}
	switch {
	case h.Width == 0 || h.Height == 0:
		h.Rule, h.Msg = RuleImageUnreadable, fmt.Sprintf("is not a readable BMP: its header gives a size of %d×%d", h.Width, h.Height)
	case offset < 14+int64(dib):
		h.Rule, h.Msg = RuleImageUnreadable, fmt.Sprintf("is not a readable BMP: its pixels start at byte %d, inside its headers", offset)
	case size < offset || fileSize > 0 && size < fileSize:
		h.Rule, h.Msg = RuleImageTruncated, fmt.Sprintf("is a BMP of %d bytes but its header says %d", size, max(fileSize, offset))
	}
	return h
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

func gifHeader(b []byte, size int64, complete bool) header {
	h := header{Format: "GIF"}
	if len(b) < 10 {
		h.More = true
		return h
	}
	h.Width, h.Height = int(binary.LittleEndian.Uint16(b[6:])), int(binary.LittleEndian.Uint16(b[8:]))
	switch {
	case h.Width == 0 || h.Height == 0:
		h.Rule, h.Msg = RuleImageUnreadable, fmt.Sprintf("is not a readable GIF: its screen is %d×%d", h.Width, h.Height)
	case size < 14:
		h.Rule, h.Msg = RuleImageTruncated, fmt.Sprintf("is a GIF of %d bytes: too short to hold an image", size)
	case complete && b[len(b)-1] != 0x3B:
		h.Rule, h.Msg = RuleImageTruncated, fmt.Sprintf("is a GIF of %d bytes that does not end with its trailer (3b)", len(b))
	}
	return h
}

func webpHeader(b []byte, size int64) header {
	h := header{Format: "WebP"}
	riff := int64(binary.LittleEndian.Uint32(b[4:])) + 8
	if len(b) < 30 {
		h.More = true
		return h
	}
	bad := func(format string, args ...any) header {
		h.Rule, h.Msg = RuleImageUnreadable, "is not a readable WebP: "+fmt.Sprintf(format, args...)
		return h
	}
	switch string(b[12:16]) {
	case "VP8 ":
		if b[23] != 0x9D || b[24] != 0x01 || b[25] != 0x2A {
			return bad("its VP8 frame has no start code")
		}
		h.Width = int(binary.LittleEndian.Uint16(b[26:]) & 0x3FFF)
		h.Height = int(binary.LittleEndian.Uint16(b[28:]) & 0x3FFF)
	case "VP8L":
		if b[20] != 0x2F {
			return bad("its VP8L stream has no signature")
		}
		v := binary.LittleEndian.Uint32(b[21:])
		h.Width, h.Height = int(v&0x3FFF)+1, int(v>>14&0x3FFF)+1
	case "VP8X":
		h.Width = int(uint32(b[24])|uint32(b[25])<<8|uint32(b[26])<<16) + 1
		h.Height = int(uint32(b[27])|uint32(b[28])<<8|uint32(b[29])<<16) + 1
	default:
		return bad("its first chunk is %q, not VP8, VP8L or VP8X", b[12:16])
	}
	if h.Width == 0 || h.Height == 0 {
		return bad("its header gives a size of %d×%d", h.Width, h.Height)
	}
	if size < riff {
		h.Rule, h.Msg = RuleImageTruncated, fmt.Sprintf("is a WebP of %d bytes but its RIFF header says %d", size, riff)
	}
	return h
}

// imageResult is what reading one image's header gave.
type imageResult struct {
	width, height int
	findings      []Finding
	// bad: the image is empty, truncated or unreadable; its sample is
	// left out.
	bad bool
}

// readImage reads and checks the header of the image key of size bytes.
// err is ReadHead's.
func readImage(ctx context.Context, read func(context.Context, string, int64) ([]byte, error), key string, size int64) (imageResult, error) {
	var r imageResult
	if size == 0 {
		r.bad = true
		r.findings = append(r.findings, errorf(RuleImageEmpty, key,
			"upload the image again, or remove it", "the image is empty (0 bytes)"))
		return r, nil
	}
	n := int64(ImageHeadBytes)
	if size > 0 {
		n = min(n, size)
	}
	head, err := read(ctx, key, n)
	if err != nil {
		return r, fmt.Errorf("reading the header of %s: %w", key, err)
	}
	if int64(len(head)) > n {
		head = head[:n]
	}
	if int64(len(head)) < n {
		r.bad = true
		r.findings = append(r.findings, errorf(RuleImageTruncated, key, "upload the image again",
			"the image is listed as %d bytes but only %d could be read", size, len(head)))
		return r, nil
	}
	if size < 0 {
		size = int64(len(head)) + 1 // unknown: assume there is more
	}
	h := checkImage(head, size)
	if h.More && h.Format == "JPEG" && int64(len(head)) < size && len(head) < jpegHeadMax {
		m := min(size, jpegHeadMax)
		if head, err = read(ctx, key, m); err != nil {
			return r, fmt.Errorf("reading the header of %s: %w", key, err)
		}
		h = checkImage(head[:min(int64(len(head)), m)], size)
	}
	if h.Rule != "" {
		r.bad = true
		hint := "open the file to check it; save it again as JPEG or PNG, or remove it"
		if h.Rule == RuleImageTruncated {
			hint = "the upload was cut short: upload the image again"
		}
		r.findings = append(r.findings, errorf(h.Rule, key, hint, "the file %s", h.Msg))
		return r, nil
	}
	r.width, r.height = h.Width, h.Height
	if want := imageExts[lowerExt(key)]; want != "" && want != h.Format {
		r.findings = append(r.findings, warnf(RuleImageExtension, key,
			fmt.Sprintf("rename it to %s", strings.TrimSuffix(key, path.Ext(key))+extOf[h.Format]),
			"the file is named like a %s image but its header is a %s one", want, h.Format))
	}
	return r, nil
}

// extOf is the usual extension of a header format.
var extOf = map[string]string{"JPEG": ".jpg", "PNG": ".png", "BMP": ".bmp", "GIF": ".gif", "WebP": ".webp"}

// forEach calls fn(ctx, i) for every i in [0, n) on up to workers
// goroutines. It stops at fn's first error, which it returns, or when
// ctx is done (ctx.Err() then).
func forEach(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	if err := ctx.Err(); err != nil || n == 0 {
		return err
	}
	inner, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next  atomic.Int64
		once  sync.Once
		first error
		wg    sync.WaitGroup
	)
	for range min(workers, n) {
		wg.Go(func() {
			// ctx too: its cancel marks it done before its children.
			for ctx.Err() == nil && inner.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(inner, i); err != nil {
					once.Do(func() { first = err })
					cancel()
					return
				}
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	return first
}

// readImages reads the header of every sample that is an image: it
// fills Width and Height, reports what is wrong, and marks the samples
// whose image cannot be used.
func (p *parser) readImages() error {
	var idx []int
	for i := range p.samples {
		if s := &p.samples[i]; s.Key != "" && !p.bad[i] && ImageExt(s.Key) {
			idx = append(idx, i)
		}
	}
	res := make([]imageResult, len(idx))
	err := forEach(p.ctx, len(idx), func(ctx context.Context, j int) error {
		s := &p.samples[idx[j]]
		r, err := readImage(ctx, p.src.ReadHead, s.Key, s.Size)
		res[j] = r
		return err
	})
	if err != nil {
		return err
	}
	for j, i := range idx {
		r := res[j]
		p.fs.addAll("", r.findings)
		if r.bad {
			p.bad[i] = true
			continue
		}
		p.samples[i].Width, p.samples[i].Height = r.width, r.height
	}
	return nil
}
