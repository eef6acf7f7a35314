package manifest

import (
	"github.com/atelier-dev/atelier/internal/dataset/format"
)

// Counts summarise a version.
type Counts struct {
	// Samples is the number of samples, Labeled of those that carry an
	// annotation, and Unlabeled of the rest.
	Samples, Labeled, Unlabeled int
	// PerClass counts the annotations of each class: a label once per
	// sample that carries it, a box once per box.
	PerClass map[string]int
	// PerUsage counts the samples of each usage; "" counts the
	// unassigned ones.
	PerUsage map[string]int
	// Bytes is the total size of the samples' objects.
	Bytes int64
}

// Count summarises samples.
func Count(samples []format.Sample) Counts {
	c := Counts{Samples: len(samples), PerClass: map[string]int{}, PerUsage: map[string]int{}}
	for i := range samples {
		s := &samples[i]
		if s.Labeled() {
			c.Labeled++
		} else {
			c.Unlabeled++
		}
		c.PerUsage[string(s.Usage)]++
		c.Bytes += s.Size
		seen := make(map[string]bool, len(s.Labels))
		for _, l := range s.Labels {
			if !seen[l] {
				seen[l] = true
				c.PerClass[l]++
			}
		}
		for _, b := range s.Boxes {
			c.PerClass[b.Label]++
		}
	}
	return c
}

// Histogram counts samples in buckets, in the buckets' order.
type Histogram struct {
	Buckets []Bucket
}

// Bucket is one bar of a histogram: what it holds ("512–1023") and how
// many.
type Bucket struct {
	Label string
	Count int
}

// histogram counts values in buckets whose upper bounds (exclusive) are
// bounds; the last bucket is everything above.
func histogram(labels []string, bounds []int, values func(yield func(int) bool)) Histogram {
	h := Histogram{Buckets: make([]Bucket, len(labels))}
	for i, l := range labels {
		h.Buckets[i].Label = l
	}
	for v := range values {
		i := 0
		for i < len(bounds) && v >= bounds[i] {
			i++
		}
		h.Buckets[i].Count++
	}
	return h
}

// SizeHistogram counts the images by their longer side, in pixels:
// "<64", "64–255", "256–511", "512–1023", "1024–2047" and "≥2048", and
// "unknown" (only when some are) for samples without a known size.
func SizeHistogram(samples []format.Sample) Histogram {
	unknown := 0
	h := histogram([]string{"<64", "64–255", "256–511", "512–1023", "1024–2047", "≥2048"},
		[]int{64, 256, 512, 1024, 2048},
		func(yield func(int) bool) {
			for i := range samples {
				s := &samples[i]
				if s.Width <= 0 || s.Height <= 0 {
					unknown++
					continue
				}
				if !yield(max(s.Width, s.Height)) {
					return
				}
			}
		})
	if unknown > 0 {
		h.Buckets = append(h.Buckets, Bucket{Label: "unknown", Count: unknown})
	}
	return h
}

// BoxHistogram counts the samples by their number of boxes: "0", "1",
// "2", "3–5", "6–10" and ">10".
func BoxHistogram(samples []format.Sample) Histogram {
	return histogram([]string{"0", "1", "2", "3–5", "6–10", ">10"},
		[]int{1, 2, 3, 6, 11},
		func(yield func(int) bool) {
			for i := range samples {
				if !yield(len(samples[i].Boxes)) {
					return
				}
			}
		})
}
