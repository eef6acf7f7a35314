package preview

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"math"
	"testing"

	"golang.org/x/image/bmp"
	"golang.org/x/image/webp"

	"github.com/atelier-dev/atelier/internal/dataset/format"
)

var grey = color.RGBA{128, 128, 128, 255}

func solid(w, h int, c color.Color) *image.RGBA {
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			m.Set(x, y, c)
		}
	}
	return m
}

func encodeAs(t testing.TB, kind string, m image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	var err error
	switch kind {
	case "png":
		err = png.Encode(&buf, m)
	case "jpeg":
		err = jpeg.Encode(&buf, m, &jpeg.Options{Quality: 95})
	case "gif":
		err = gif.Encode(&buf, m, nil)
	case "bmp":
		err = bmp.Encode(&buf, m)
	case "webp":
		// x/image has no WebP encoder; build a lossless one by hand.
		b := m.Bounds()
		return losslessWebP(t, b.Dx(), b.Dy(), func(x, y int) bool {
			r, _, _, _ := m.At(b.Min.X+x, b.Min.Y+y).RGBA()
			return r>>8 >= 128
		})
	default:
		t.Fatalf("unknown kind %q", kind)
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// bitWriter writes VP8L's LSB-first bit stream.
type bitWriter struct {
	buf   []byte
	acc   uint64
	nBits uint
}

func (w *bitWriter) write(v uint64, n uint) {
	w.acc |= v << w.nBits
	w.nBits += n
	for w.nBits >= 8 {
		w.buf = append(w.buf, byte(w.acc))
		w.acc >>= 8
		w.nBits -= 8
	}
}

func (w *bitWriter) bytes() []byte {
	if w.nBits > 0 {
		w.buf = append(w.buf, byte(w.acc))
		w.acc, w.nBits = 0, 0
	}
	return w.buf
}

// losslessWebP builds a lossless (VP8L) WebP of w x h opaque pixels that
// are red where red(x, y) and blue elsewhere, following the WebP lossless
// bitstream spec: no transforms, no colour cache, no meta prefix codes,
// and five "simple" prefix codes (green, alpha and distance with one
// zero-length symbol; red and blue with two 1-bit symbols, 0 and 255), so
// each pixel costs two bits.
func losslessWebP(t testing.TB, w, h int, red func(x, y int) bool) []byte {
	t.Helper()
	var bw bitWriter
	bw.write(0x2f, 8) // VP8L signature
	bw.write(uint64(w-1), 14)
	bw.write(uint64(h-1), 14)
	bw.write(0, 1) // alpha_is_used hint
	bw.write(0, 3) // version
	bw.write(0, 1) // no transform
	bw.write(0, 1) // no colour cache
	bw.write(0, 1) // no meta prefix codes
	oneSymbol := func(sym uint64) {
		bw.write(1, 1) // simple code
		bw.write(0, 1) // num_symbols - 1 = 0
		bw.write(1, 1) // is_first_8bits
		bw.write(sym, 8)
	}
	twoSymbols := func(a, b uint64) {
		bw.write(1, 1) // simple code
		bw.write(1, 1) // num_symbols - 1 = 1
		bw.write(1, 1) // is_first_8bits
		bw.write(a, 8)
		bw.write(b, 8)
	}
	oneSymbol(0)       // green
	twoSymbols(0, 255) // red: bit 0 -> 0, bit 1 -> 255
	twoSymbols(0, 255) // blue
	oneSymbol(255)     // alpha
	oneSymbol(0)       // distance
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			if red(x, y) {
				bw.write(1, 1) // red 255
				bw.write(0, 1) // blue 0
			} else {
				bw.write(0, 1)
				bw.write(1, 1)
			}
		}
	}
	chunk := bw.bytes()
	var out []byte
	out = append(out, "RIFF"...)
	size := 4 + 8 + len(chunk) + len(chunk)%2
	out = binary.LittleEndian.AppendUint32(out, uint32(size))
	out = append(out, "WEBPVP8L"...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(chunk)))
	out = append(out, chunk...)
	if len(chunk)%2 == 1 {
		out = append(out, 0)
	}
	return out
}

// TestLosslessWebPFixture checks the hand-built WebP decodes to what it
// was built from, so the WebP cases below test Thumbnail, not the fixture.
func TestLosslessWebPFixture(t *testing.T) {
	data := losslessWebP(t, 5, 3, func(x, y int) bool { return x < 2 })
	m, err := webp.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("x/image/webp rejects the fixture: %v", err)
	}
	if b := m.Bounds(); b.Dx() != 5 || b.Dy() != 3 {
		t.Fatalf("bounds %v, want 5x3", b)
	}
	for y := 0; y < 3; y++ {
		for x := 0; x < 5; x++ {
			want := color.NRGBA{0, 0, 255, 255}
			if x < 2 {
				want = color.NRGBA{255, 0, 0, 255}
			}
			if got := color.NRGBAModel.Convert(m.At(x, y)); got != want {
				t.Errorf("pixel (%d,%d) = %v, want %v", x, y, got, want)
			}
		}
	}
}

func decodeJPEG(t *testing.T, data []byte) image.Image {
	t.Helper()
	m, err := jpeg.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("output is not a JPEG: %v", err)
	}
	return m
}

func rgb(c color.Color) (r, g, b int) {
	r32, g32, b32, _ := c.RGBA()
	return int(r32 >> 8), int(g32 >> 8), int(b32 >> 8)
}

// dist is the largest per-channel difference between two colours.
func dist(a, b color.Color) int {
	ar, ag, ab := rgb(a)
	br, bg, bb := rgb(b)
	abs := func(v int) int { return max(v, -v) }
	return max(abs(ar-br), abs(ag-bg), abs(ab-bb))
}

func TestThumbnailFormatsAndSizes(t *testing.T) {
	for _, kind := range []string{"png", "jpeg", "gif", "bmp", "webp"} {
		for _, tc := range []struct {
			w, h, side   int
			wantW, wantH int
			note         string
		}{
			{400, 200, 100, 100, 50, "landscape halves"},
			{150, 600, 120, 30, 120, "portrait, longer side is height"},
			{300, 300, 0, 256, 256, "side 0 means DefaultSide"},
			{50, 120, 256, 50, 120, "never upscaled"},
			{640, 480, 256, 256, 192, "4:3 kept"},
			{1000, 3, 256, 256, 1, "sliver keeps at least one pixel"},
			{1, 1, 256, 1, 1, "single pixel"},
		} {
			name := kind + "/" + tc.note
			t.Run(name, func(t *testing.T) {
				c := color.RGBA{0, 0, 255, 255} // blue: exact in the WebP fixture and the GIF palette
				data := encodeAs(t, kind, solid(tc.w, tc.h, c))
				out, err := Thumbnail(data, tc.side, nil)
				if err != nil {
					t.Fatal(err)
				}
				m := decodeJPEG(t, out)
				if b := m.Bounds(); b.Dx() != tc.wantW || b.Dy() != tc.wantH {
					t.Fatalf("thumbnail of %dx%d at side %d is %dx%d, want %dx%d",
						tc.w, tc.h, tc.side, b.Dx(), b.Dy(), tc.wantW, tc.wantH)
				}
				if d := dist(m.At(tc.wantW/2, tc.wantH/2), c); d > 24 {
					t.Errorf("centre pixel %v, want about %v", m.At(tc.wantW/2, tc.wantH/2), c)
				}
			})
		}
	}
}

// TestThumbnailContent checks the picture is scaled, not cropped or
// mirrored: a left-red/right-blue source keeps its halves.
func TestThumbnailContent(t *testing.T) {
	src := image.NewRGBA(image.Rect(0, 0, 400, 200))
	for y := 0; y < 200; y++ {
		for x := 0; x < 400; x++ {
			if x < 100 {
				src.Set(x, y, color.RGBA{255, 0, 0, 255})
			} else {
				src.Set(x, y, color.RGBA{0, 0, 255, 255})
			}
		}
	}
	for _, kind := range []string{"png", "jpeg", "gif", "bmp", "webp"} {
		t.Run(kind, func(t *testing.T) {
			out, err := Thumbnail(encodeAs(t, kind, src), 100, nil)
			if err != nil {
				t.Fatal(err)
			}
			m := decodeJPEG(t, out) // 100x50; red is x < 25
			if d := dist(m.At(10, 25), color.RGBA{255, 0, 0, 255}); d > 40 {
				t.Errorf("left pixel %v, want red", m.At(10, 25))
			}
			if d := dist(m.At(70, 25), color.RGBA{0, 0, 255, 255}); d > 40 {
				t.Errorf("right pixel %v, want blue", m.At(70, 25))
			}
		})
	}
}

func TestThumbnailBoxes(t *testing.T) {
	boxes := []format.Box{
		{Label: "cat", XMin: 100, YMin: 50, XMax: 300, YMax: 150},
		{Label: "dog", XMin: 20, YMin: 20, XMax: 60, YMax: 180},
	}
	for _, kind := range []string{"png", "jpeg", "bmp"} {
		t.Run(kind, func(t *testing.T) {
			out, err := Thumbnail(encodeAs(t, kind, solid(400, 200, grey)), 200, boxes)
			if err != nil {
				t.Fatal(err)
			}
			m := decodeJPEG(t, out) // scale 0.5: cat is (50,25)-(150,75), dog (10,10)-(30,90)
			cat := LabelColor("cat")
			onOutline := []image.Point{
				{50, 50}, {51, 50}, // left edge
				{148, 50}, {149, 50}, // right edge
				{100, 25}, {100, 26}, // top edge
				{100, 73}, {100, 74}, // bottom edge
			}
			for _, p := range onOutline {
				if d := dist(m.At(p.X, p.Y), grey); d < 40 {
					t.Errorf("outline pixel %v = %v, too close to the background %v", p, m.At(p.X, p.Y), grey)
				}
			}
			// The middle of a 2-px line keeps the label's colour (JPEG blurs edges).
			if d := dist(m.At(100, 25), cat); d > 60 {
				t.Errorf("top edge pixel %v, want about %v (cat's colour)", m.At(100, 25), cat)
			}
			for _, p := range []image.Point{{100, 50}, {70, 40}, {130, 62}, {180, 50}, {20, 50}, {190, 90}} {
				if d := dist(m.At(p.X, p.Y), grey); d > 12 {
					t.Errorf("pixel %v off the outlines = %v, want the background %v", p, m.At(p.X, p.Y), grey)
				}
			}
			if d := dist(m.At(10, 50), grey); d < 40 {
				t.Errorf("dog's left edge at (10,50) = %v, not drawn", m.At(10, 50))
			}
		})
	}
}

func TestThumbnailNoBoxesNoOutline(t *testing.T) {
	out, err := Thumbnail(encodeAs(t, "png", solid(400, 200, grey)), 200, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := decodeJPEG(t, out)
	if d := dist(m.At(50, 50), grey); d > 12 {
		t.Errorf("pixel (50,50) = %v without boxes, want the background", m.At(50, 50))
	}
}

func TestThumbnailHostileBoxes(t *testing.T) {
	data := encodeAs(t, "png", solid(40, 30, grey))
	boxes := []format.Box{
		{Label: "nan", XMin: math.NaN(), YMin: 0, XMax: 10, YMax: 10},
		{Label: "inf", XMin: math.Inf(-1), YMin: math.Inf(-1), XMax: math.Inf(1), YMax: math.Inf(1)},
		{Label: "huge", XMin: -1e300, YMin: -1e300, XMax: 1e300, YMax: 1e300},
		{Label: "swapped", XMin: 30, YMin: 20, XMax: 5, YMax: 2},
		{Label: "outside", XMin: 1000, YMin: 1000, XMax: 2000, YMax: 2000},
		{Label: "", XMin: 3, YMin: 3, XMax: 3, YMax: 3},
	}
	out, err := Thumbnail(data, 20, boxes)
	if err != nil {
		t.Fatal(err)
	}
	if b := decodeJPEG(t, out).Bounds(); b.Dx() != 20 || b.Dy() != 15 {
		t.Fatalf("bounds %v, want 20x15", b)
	}
}

func TestThumbnailTransparentIsWhite(t *testing.T) {
	out, err := Thumbnail(encodeAs(t, "png", solid(20, 20, color.NRGBA{0, 0, 0, 0})), 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := dist(decodeJPEG(t, out).At(5, 5), color.White); d > 8 {
		t.Errorf("transparent pixel became %v, want white", decodeJPEG(t, out).At(5, 5))
	}
}

// TestThumbnailGIFFrameOffset: a GIF whose first frame covers only the
// right half of its screen is drawn at that place on a white canvas of
// the screen's size.
func TestThumbnailGIFFrameOffset(t *testing.T) {
	frame := image.NewPaletted(image.Rect(50, 0, 100, 100), color.Palette{color.RGBA{0, 0, 255, 255}})
	var buf bytes.Buffer
	err := gif.EncodeAll(&buf, &gif.GIF{
		Image:  []*image.Paletted{frame},
		Delay:  []int{0},
		Config: image.Config{Width: 100, Height: 100, ColorModel: frame.Palette},
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := Thumbnail(buf.Bytes(), 50, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := decodeJPEG(t, out)
	if b := m.Bounds(); b.Dx() != 50 || b.Dy() != 50 {
		t.Fatalf("bounds %v, want 50x50", b)
	}
	if d := dist(m.At(10, 25), color.White); d > 12 {
		t.Errorf("left (no frame) = %v, want white", m.At(10, 25))
	}
	if d := dist(m.At(40, 25), color.RGBA{0, 0, 255, 255}); d > 40 {
		t.Errorf("right (frame) = %v, want blue", m.At(40, 25))
	}
}

// pngHeader is a PNG signature and an IHDR chunk (8-bit RGBA) claiming
// w x h, followed by the given raw chunks.
func pngHeader(w, h uint32, chunks ...[]byte) []byte {
	chunk := func(typ string, data []byte) []byte {
		var c []byte
		c = binary.BigEndian.AppendUint32(c, uint32(len(data)))
		c = append(c, typ...)
		c = append(c, data...)
		return binary.BigEndian.AppendUint32(c, crc32.ChecksumIEEE(append([]byte(typ), data...)))
	}
	ihdr := binary.BigEndian.AppendUint32(nil, w)
	ihdr = binary.BigEndian.AppendUint32(ihdr, h)
	ihdr = append(ihdr, 8, 6, 0, 0, 0)
	out := append([]byte("\x89PNG\r\n\x1a\n"), chunk("IHDR", ihdr)...)
	for _, c := range chunks {
		out = append(out, chunk(string(c[:4]), c[4:])...)
	}
	return out
}

// idat is a small IDAT whose zlib stream starts a scanline, enough for a
// decoder that trusted the header to allocate the whole image.
var idat = append([]byte("IDAT"), 0x78, 0x9c, 0x63, 0x60, 0x00, 0x00)
var iend = []byte("IEND")

// withDecodeSpy replaces every codec's decode with one that counts calls.
func withDecodeSpy(t *testing.T) *int {
	calls := new(int)
	for _, c := range []*codec{&codecJPEG, &codecPNG, &codecGIF, &codecBMP, &codecWebP} {
		orig := c.decode
		c.decode = func(r io.Reader) (image.Image, error) {
			*calls++
			return orig(r)
		}
		t.Cleanup(func() { c.decode = orig })
	}
	return calls
}

func TestThumbnailRefusesBombsBeforeDecoding(t *testing.T) {
	calls := withDecodeSpy(t)
	var bmpHdr bytes.Buffer
	if err := bmp.Encode(&bmpHdr, solid(1, 1, grey)); err != nil {
		t.Fatal(err)
	}
	bigBMP := bmpHdr.Bytes()
	binary.LittleEndian.PutUint32(bigBMP[18:], 20000) // width
	binary.LittleEndian.PutUint32(bigBMP[22:], 20000) // height
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"png 100000x100000", pngHeader(100000, 100000, idat, iend)},
		{"png just over MaxPixels", pngHeader(8000, 5001, idat, iend)},
		{"png 2^31-1 square", pngHeader(math.MaxInt32, math.MaxInt32, idat, iend)},
		{"webp 16384x16384", losslessWebPHeader(16384, 16384)},
		{"bmp 20000x20000", bigBMP},
	} {
		t.Run(tc.name, func(t *testing.T) {
			*calls = 0
			_, err := Thumbnail(tc.data, 256, nil)
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("err = %v, want ErrTooLarge", err)
			}
			if *calls != 0 {
				t.Fatalf("decoder ran %d times before the refusal", *calls)
			}
		})
	}
	// At the limit the header passes and the (empty) image is decoded,
	// failing as corrupt: the limit, not the missing data, refused above.
	*calls = 0
	_, err := Thumbnail(pngHeader(8000, 5000, iend), 256, nil)
	if !errors.Is(err, ErrCorrupt) || *calls != 1 {
		t.Fatalf("8000x5000 header-only PNG: err = %v, decodes = %d; want ErrCorrupt after 1 decode", err, *calls)
	}
}

// losslessWebPHeader is a VP8L WebP whose header claims w x h and whose
// bitstream stops right after it.
func losslessWebPHeader(w, h int) []byte {
	var bw bitWriter
	bw.write(0x2f, 8)
	bw.write(uint64(w-1), 14)
	bw.write(uint64(h-1), 14)
	bw.write(0, 4)
	chunk := bw.bytes()
	out := append([]byte("RIFF"), 0, 0, 0, 0)
	out = append(out, "WEBPVP8L"...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(chunk)))
	out = append(out, chunk...)
	if len(chunk)%2 == 1 {
		out = append(out, 0)
	}
	binary.LittleEndian.PutUint32(out[4:], uint32(len(out)-8))
	return out
}

func TestThumbnailMaxSourceBytes(t *testing.T) {
	small := encodeAs(t, "png", solid(4, 4, grey))
	// Trailing bytes after IEND are ignored by the PNG decoder, so the
	// padded image decodes at the limit and is refused just over it.
	atLimit := make([]byte, MaxSourceBytes)
	copy(atLimit, small)
	if _, err := Thumbnail(atLimit, 8, nil); err != nil {
		t.Fatalf("image of exactly MaxSourceBytes: %v", err)
	}
	over := append(atLimit, 0)
	if _, err := Thumbnail(over, 8, nil); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("image of MaxSourceBytes+1: err = %v, want ErrTooLarge", err)
	}
}

func TestThumbnailBadInput(t *testing.T) {
	pngData := encodeAs(t, "png", solid(64, 64, grey))
	jpegData := encodeAs(t, "jpeg", solid(64, 64, grey))
	gifData := encodeAs(t, "gif", solid(64, 64, grey))
	bmpData := encodeAs(t, "bmp", solid(64, 64, grey))
	webpData := encodeAs(t, "webp", solid(64, 64, grey))
	bmp16 := bytes.Clone(bmpData)
	binary.LittleEndian.PutUint16(bmp16[28:], 16) // 16 bpp: valid BMP, not supported
	badCRC := bytes.Clone(pngData)
	badCRC[len(badCRC)-20] ^= 0xff // inside IDAT: checksum mismatch
	for _, tc := range []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, ErrCorrupt},
		{"garbage", []byte("hello, world: not an image"), ErrUnsupported},
		{"tiff", []byte("II*\x00\x08\x00\x00\x00"), ErrUnsupported},
		{"riff but not webp", []byte("RIFF\x04\x00\x00\x00WAVE"), ErrUnsupported},
		{"png magic only", pngData[:8], ErrCorrupt},
		{"png truncated header", pngData[:20], ErrCorrupt},
		{"png truncated data", pngData[:len(pngData)/2], ErrCorrupt},
		{"png bad crc", badCRC, ErrCorrupt},
		{"png no IDAT", pngHeader(4, 4, iend), ErrCorrupt},
		{"png zero width", pngHeader(0, 4, idat, iend), ErrCorrupt},
		{"jpeg magic only", jpegData[:2], ErrCorrupt},
		{"jpeg truncated", jpegData[:len(jpegData)/2], ErrCorrupt},
		{"gif truncated", gifData[:len(gifData)/2], ErrCorrupt},
		{"gif header only", gifData[:6], ErrCorrupt},
		{"bmp truncated", bmpData[:len(bmpData)/2], ErrCorrupt},
		{"bmp 16bpp", bmp16, ErrUnsupported},
		{"webp truncated", webpData[:len(webpData)/2], ErrCorrupt},
		{"webp header only", webpData[:16], ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Thumbnail(tc.data, 32, nil)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if out != nil {
				t.Fatalf("output %d bytes with an error", len(out))
			}
		})
	}
}

func TestLabelColor(t *testing.T) {
	// Pinned so the colours (and any legend built on them) do not drift.
	if got, want := LabelColor("cat"), (color.RGBA{0xff, 0x40, 0xdc, 0xff}); got != want {
		t.Errorf(`LabelColor("cat") = %#v, want %#v`, got, want)
	}
	seen := map[color.RGBA]string{}
	for _, l := range []string{"cat", "dog", "person", "car", "bicycle", "", "bird"} {
		c := LabelColor(l)
		if c.A != 255 {
			t.Errorf("LabelColor(%q) = %v, not opaque", l, c)
		}
		if other, dup := seen[c]; dup {
			t.Errorf("LabelColor(%q) = LabelColor(%q) = %v", l, other, c)
		}
		seen[c] = l
	}
}

func FuzzThumbnail(f *testing.F) {
	f.Add(encodeAs(f, "png", solid(2, 2, grey)), uint8(1))
	f.Add(encodeAs(f, "jpeg", solid(8, 8, grey)), uint8(4))
	f.Add(encodeAs(f, "gif", solid(2, 2, grey)), uint8(1))
	f.Add(encodeAs(f, "bmp", solid(2, 2, grey)), uint8(1))
	f.Add(losslessWebP(f, 3, 2, func(x, y int) bool { return x == y }), uint8(2))
	f.Add(pngHeader(100000, 100000, idat, iend), uint8(8))
	f.Add([]byte("RIFF\x00\x00\x00\x00WEBPVP8 "), uint8(0))
	f.Add([]byte("GIF89a"), uint8(3))
	boxes := []format.Box{{Label: "a", XMin: 0, YMin: 0, XMax: 1, YMax: 1}, {Label: "b", XMin: -5, YMin: 1, XMax: 1e9, YMax: 2}}
	f.Fuzz(func(t *testing.T, data []byte, side uint8) {
		out, err := Thumbnail(data, int(side%64), boxes)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupported) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		m, err := jpeg.Decode(bytes.NewReader(out))
		if err != nil {
			t.Fatalf("output is not a JPEG: %v", err)
		}
		s := int(side % 64)
		if s == 0 {
			s = DefaultSide
		}
		if b := m.Bounds(); b.Dx() > s || b.Dy() > s || b.Empty() {
			t.Fatalf("thumbnail %v exceeds side %d", b, s)
		}
	})
}
