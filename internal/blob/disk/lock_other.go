//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package disk

import (
	"io"
	"os"
)

// lockDir opens the lock file. This system has no flock(2), so the
// directory is not locked against a second store.
func lockDir(path string) (_ io.Closer, busy bool, _ error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, false, err
	}
	return f, false, nil
}
