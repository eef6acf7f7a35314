// Package preview makes dataset previews: small JPEG thumbnails of sample
// images with their detection boxes drawn on, short-lived signed tokens
// for preview URLs, and a stable per-class sampler that picks which
// samples to show.
//
// Everything here is pure Go and safe on hostile input: Thumbnail caps
// the source size and the pixel count (read from the image header before
// anything is decoded), recovers from decoder panics and reports failures
// as ErrTooLarge, ErrUnsupported or ErrCorrupt; Signer tokens are
// HMAC-SHA256 authenticated and checked in constant time.
package preview
