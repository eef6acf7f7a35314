//go:build !linux

package disk

// newPair returns a pair from the heap: only Linux writes directly, where
// huge pages matter.
func newPair() *pair { return heapPair() }
