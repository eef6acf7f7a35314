//go:build darwin || dragonfly || freebsd || linux

package disk

import "golang.org/x/sys/unix"

// freeBytes is the space that unprivileged writers may still use on the
// file system holding path (statfs(2): available blocks × block size).
func freeBytes(path string) (int64, error) {
	var st unix.Statfs_t
	for {
		err := unix.Statfs(path, &st)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		return int64(st.Bavail) * int64(st.Bsize), nil
	}
}
