package preview

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"math"
	"strings"

	"golang.org/x/image/bmp"
	"golang.org/x/image/draw"
	"golang.org/x/image/webp"

	"github.com/atelier-dev/atelier/internal/dataset/format"
)

// Limits on what Thumbnail decodes.
const (
	// MaxSourceBytes is the largest encoded image Thumbnail accepts; a
	// larger one is refused with ErrTooLarge without being read.
	MaxSourceBytes = 32 << 20
	// MaxPixels is the largest width*height (from the image header)
	// Thumbnail decodes; a larger image is refused with ErrTooLarge
	// before any pixel buffer is allocated (decompression bombs).
	MaxPixels = 40_000_000
	// DefaultSide is the thumbnail's longer side when Thumbnail is given
	// side <= 0.
	DefaultSide = 256
)

// jpegQuality is the quality Thumbnail encodes its output at.
const jpegQuality = 80

// Errors Thumbnail returns; test with errors.Is (they are wrapped with
// the decoder's message).
var (
	// ErrTooLarge: the encoded data is over MaxSourceBytes or the image
	// is over MaxPixels.
	ErrTooLarge = errors.New("preview: image too large")
	// ErrUnsupported: not a JPEG, PNG, GIF, BMP or WebP image, or a
	// variant of one the decoder does not support.
	ErrUnsupported = errors.New("preview: unsupported image format")
	// ErrCorrupt: the data looks like a supported format but does not
	// decode (truncated, malformed).
	ErrCorrupt = errors.New("preview: corrupt image")
)

// codec is one image format Thumbnail reads.
type codec struct {
	name   string
	config func(io.Reader) (image.Config, error)
	decode func(io.Reader) (image.Image, error)
}

var (
	codecJPEG = codec{"jpeg", jpeg.DecodeConfig, jpeg.Decode}
	codecPNG  = codec{"png", png.DecodeConfig, png.Decode}
	codecGIF  = codec{"gif", gif.DecodeConfig, gif.Decode}
	codecBMP  = codec{"bmp", bmp.DecodeConfig, bmp.Decode}
	codecWebP = codec{"webp", webp.DecodeConfig, webp.Decode}
)

// sniff picks the codec from the data's magic bytes, or nil. It does not
// go through image.Decode's registry so that formats registered elsewhere
// in the binary are not reachable from here.
func sniff(b []byte) *codec {
	switch {
	case bytes.HasPrefix(b, []byte("\xff\xd8")):
		return &codecJPEG
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return &codecPNG
	case bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")):
		return &codecGIF
	case bytes.HasPrefix(b, []byte("BM")):
		return &codecBMP
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return &codecWebP
	}
	return nil
}

// classify wraps a decoder error as ErrUnsupported (the decoder says the
// variant is valid but not handled) or ErrCorrupt (anything else).
func classify(c *codec, err error) error {
	var (
		jpegUnsupported jpeg.UnsupportedError
		pngUnsupported  png.UnsupportedError
	)
	if errors.As(err, &pngUnsupported) && strings.Contains(string(pngUnsupported), "dimension overflow") {
		// Width*height does not fit an int: too large by any measure.
		return fmt.Errorf("%w: %s: %v", ErrTooLarge, c.name, err)
	}
	if errors.As(err, &jpegUnsupported) || errors.As(err, &pngUnsupported) || errors.Is(err, bmp.ErrUnsupported) {
		return fmt.Errorf("%w: %s: %v", ErrUnsupported, c.name, err)
	}
	return fmt.Errorf("%w: %s: %v", ErrCorrupt, c.name, err)
}

// Thumbnail decodes an image (JPEG, PNG, GIF, BMP or WebP), scales it so
// its longer side is at most side pixels (side <= 0 means DefaultSide; it
// never upscales), draws each box (in the source image's pixels, scaled
// with it) as a 2-pixel rectangle outline in a colour derived from a hash
// of the box's label, and encodes the result as a JPEG of quality 80.
// Transparent areas come out white; a GIF gives its first frame.
//
// It refuses data over MaxSourceBytes and images over MaxPixels (checked
// on the header, before decoding) with ErrTooLarge, unknown formats with
// ErrUnsupported, and undecodable data with ErrCorrupt. It does not panic
// on any input: a panic inside a decoder is reported as ErrCorrupt.
func Thumbnail(data []byte, side int, boxes []format.Box) (out []byte, err error) {
	if len(data) > MaxSourceBytes {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(data), MaxSourceBytes)
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: empty data", ErrCorrupt)
	}
	if side <= 0 {
		side = DefaultSide
	}
	c := sniff(data)
	if c == nil {
		return nil, fmt.Errorf("%w: unrecognised header", ErrUnsupported)
	}
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("%w: %s: decoder panic: %v", ErrCorrupt, c.name, r)
		}
	}()

	cfg, err := c.config(bytes.NewReader(data))
	if err != nil {
		return nil, classify(c, err)
	}
	w, h := cfg.Width, cfg.Height
	if w <= 0 || h <= 0 {
		return nil, fmt.Errorf("%w: %s: %dx%d", ErrCorrupt, c.name, w, h)
	}
	if int64(w)*int64(h) > MaxPixels {
		return nil, fmt.Errorf("%w: %s: %dx%d pixels, limit %d", ErrTooLarge, c.name, w, h, MaxPixels)
	}
	src, err := c.decode(bytes.NewReader(data))
	if err != nil {
		return nil, classify(c, err)
	}
	sb := src.Bounds()
	if sb.Empty() {
		return nil, fmt.Errorf("%w: %s: empty image", ErrCorrupt, c.name)
	}

	// The canvas is the header's size (a GIF's first frame may cover only
	// part of it); dw x dh keeps its aspect ratio.
	dw, dh := w, h
	if long := max(w, h); long > side {
		s := float64(side) / float64(long)
		dw = max(1, int(math.Round(float64(w)*s)))
		dh = max(1, int(math.Round(float64(h)*s)))
	}
	sx, sy := float64(dw)/float64(w), float64(dh)/float64(h)

	dst := image.NewRGBA(image.Rect(0, 0, dw, dh))
	draw.Draw(dst, dst.Bounds(), image.White, image.Point{}, draw.Src)
	dr := image.Rect(
		int(math.Round(float64(sb.Min.X)*sx)), int(math.Round(float64(sb.Min.Y)*sy)),
		int(math.Round(float64(sb.Max.X)*sx)), int(math.Round(float64(sb.Max.Y)*sy)),
	)
	if dr.Dx() == dw && dr.Dy() == dh && sb.Dx() == dw && sb.Dy() == dh {
		draw.Draw(dst, dr, src, sb.Min, draw.Over) // no scaling needed
	} else if !dr.Empty() {
		draw.BiLinear.Scale(dst, dr, src, sb, draw.Over, nil)
	}

	for _, b := range boxes {
		drawBox(dst, b.XMin*sx, b.YMin*sy, b.XMax*sx, b.YMax*sy, LabelColor(b.Label))
	}

	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, dst, &jpeg.Options{Quality: jpegQuality}); err != nil {
		return nil, fmt.Errorf("preview: encode thumbnail: %w", err)
	}
	return buf.Bytes(), nil
}

// boxWidth is the outline's thickness in thumbnail pixels.
const boxWidth = 2

// drawBox draws a boxWidth-pixel outline just inside the rectangle
// [x0,x1)x[y0,y1) (thumbnail pixels), clipped to dst. Non-finite
// coordinates draw nothing; swapped ones are put in order.
func drawBox(dst *image.RGBA, x0, y0, x1, y1 float64, c color.RGBA) {
	for _, v := range []float64{x0, y0, x1, y1} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return
		}
	}
	if x0 > x1 {
		x0, x1 = x1, x0
	}
	if y0 > y1 {
		y0, y1 = y1, y0
	}
	b := dst.Bounds()
	// Clamp in float space first so the int conversions cannot overflow.
	clamp := func(v float64, lo, hi int) int {
		return int(math.Max(float64(lo-boxWidth), math.Min(float64(hi+boxWidth), math.Floor(v))))
	}
	l, t := clamp(x0, b.Min.X, b.Max.X), clamp(y0, b.Min.Y, b.Max.Y)
	r, bt := clamp(math.Ceil(x1), b.Min.X, b.Max.X), clamp(math.Ceil(y1), b.Min.Y, b.Max.Y)
	// Keep a degenerate (sub-pixel) box visible as a boxWidth square.
	if r-l < boxWidth {
		r = l + boxWidth
	}
	if bt-t < boxWidth {
		bt = t + boxWidth
	}
	u := image.NewUniform(c)
	for _, rr := range []image.Rectangle{
		image.Rect(l, t, r, t+boxWidth),   // top
		image.Rect(l, bt-boxWidth, r, bt), // bottom
		image.Rect(l, t, l+boxWidth, bt),  // left
		image.Rect(r-boxWidth, t, r, bt),  // right
	} {
		draw.Draw(dst, rr.Intersect(b), u, image.Point{}, draw.Src)
	}
}

// LabelColor is the opaque colour Thumbnail outlines a label's boxes in:
// a saturated hue chosen by an FNV-1a hash of the label, the same in every
// process, so a legend can show the same colour.
func LabelColor(label string) color.RGBA {
	f := fnv.New32a()
	f.Write([]byte(label))
	hash := f.Sum32()
	hue := float64(hash%360) / 60 // 0..6
	// Vary saturation/value a little too, so near hues still differ.
	s := 0.75 + 0.25*float64((hash>>9)%2)
	v := 0.85 + 0.15*float64((hash>>10)%2)
	i := int(hue)
	f6 := hue - float64(i)
	p, q, t := v*(1-s), v*(1-s*f6), v*(1-s*(1-f6))
	var r, g, b float64
	switch i % 6 {
	case 0:
		r, g, b = v, t, p
	case 1:
		r, g, b = q, v, p
	case 2:
		r, g, b = p, v, t
	case 3:
		r, g, b = p, q, v
	case 4:
		r, g, b = t, p, v
	default:
		r, g, b = v, p, q
	}
	return color.RGBA{uint8(math.Round(r * 255)), uint8(math.Round(g * 255)), uint8(math.Round(b * 255)), 255}
}
