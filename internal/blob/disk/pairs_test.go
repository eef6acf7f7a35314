package disk

import (
	"runtime"
	"testing"
	"unsafe"
)

// TestPairShape checks what a direct write relies on: two disjoint
// buffers of bufSize, each aligned to directAlign, and on Linux both in
// one 2 MiB-aligned region (one huge page where the kernel gives one).
func TestPairShape(t *testing.T) {
	for _, tc := range []struct {
		name string
		pr   *pair
	}{
		{"new", newPair()},
		{"heap", heapPair()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer tc.pr.free()
			a, b := tc.pr.bufs[0], tc.pr.bufs[1]
			for i, buf := range [][]byte{a, b} {
				if len(buf) != bufSize || cap(buf) != bufSize {
					t.Fatalf("buffer %d: len %d cap %d, want %d", i, len(buf), cap(buf), bufSize)
				}
				if addr(buf)%directAlign != 0 {
					t.Fatalf("buffer %d at %#x is not aligned to %d", i, addr(buf), directAlign)
				}
			}
			if addr(a) < addr(b)+bufSize && addr(b) < addr(a)+bufSize {
				t.Fatalf("the buffers overlap: %#x and %#x", addr(a), addr(b))
			}
			// Both are writable to the last byte, and independent.
			a[0], a[bufSize-1], b[0], b[bufSize-1] = 1, 2, 3, 4
			if a[0] != 1 || a[bufSize-1] != 2 || b[0] != 3 || b[bufSize-1] != 4 {
				t.Fatal("the buffers do not keep what was written")
			}
			if tc.name == "new" && runtime.GOOS == "linux" {
				if addr(a)%(2<<20) != 0 || addr(b) != addr(a)+bufSize {
					t.Fatalf("the pair is not one 2 MiB-aligned region: %#x, %#x", addr(a), addr(b))
				}
			}
		})
	}
}

func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// TestPairPoolKeepsAtMostMaxIdle gives back more pairs than the pool
// keeps: the extra ones are released, the kept ones are handed out again.
func TestPairPoolKeepsAtMostMaxIdle(t *testing.T) {
	p := newPairPool()
	released := 0
	var got []*pair
	for range maxIdlePairs + 3 {
		pr := p.get()
		rel := pr.release
		pr.release = func() {
			released++
			if rel != nil {
				rel()
			}
		}
		got = append(got, pr)
	}
	for _, pr := range got {
		p.put(pr)
	}
	if released != 3 {
		t.Fatalf("%d pairs released, want 3", released)
	}
	kept := map[*pair]bool{}
	for _, pr := range got[:maxIdlePairs] {
		kept[pr] = true
	}
	for range maxIdlePairs {
		if pr := p.get(); !kept[pr] {
			t.Fatal("get made a new pair while kept ones were idle")
		}
	}
	for pr := range kept {
		pr.free()
	}
}

// TestPairPoolClose releases the idle pairs and every pair given back
// after.
func TestPairPoolClose(t *testing.T) {
	p := newPairPool()
	released := 0
	track := func(pr *pair) *pair {
		rel := pr.release
		pr.release = func() {
			released++
			if rel != nil {
				rel()
			}
		}
		return pr
	}
	idle, out := track(p.get()), track(p.get())
	p.put(idle)
	p.close()
	if released != 1 {
		t.Fatalf("close released %d pairs, want the 1 idle one", released)
	}
	p.put(out)
	if released != 2 {
		t.Fatalf("a pair given back after close was kept (%d released)", released)
	}
	if pr := p.get(); pr == idle || pr == out {
		t.Fatal("get after close handed out a released pair")
	} else {
		pr.free()
	}
}
