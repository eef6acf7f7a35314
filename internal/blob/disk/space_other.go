//go:build !(darwin || dragonfly || freebsd || linux)

package disk

import "errors"

// freeBytes cannot tell the free space here: the store keeps no reserve
// (Open logs it when one is asked for).
func freeBytes(string) (int64, error) { return 0, errors.ErrUnsupported }
