package runner

import (
	"fmt"
	"path/filepath"
	"syscall"

	"github.com/atelier-dev/atelier/internal/sandbox"
)

// mountTmpfs mounts a tmpfs of size bytes at dir (root only), so that the
// job's disk is limited and its usage can be read with statfs; its root is
// user code's (id).
func mountTmpfs(dir string, size int64, id sandbox.Identity) error {
	opts := fmt.Sprintf("size=%d,mode=0755", size)
	if id.Mode == sandbox.IdentityDrop {
		opts = fmt.Sprintf("size=%d,mode=0700,uid=%d,gid=%d", size, id.UID, id.GID)
	}
	return syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, opts)
}

// isMountPoint reports whether dir is on another device than its parent.
func isMountPoint(dir string) bool {
	var a, b syscall.Stat_t
	if syscall.Stat(dir, &a) != nil || syscall.Stat(filepath.Dir(dir), &b) != nil {
		return false
	}
	return a.Dev != b.Dev
}

// unmountStale unmounts dir when something is mounted there (a tmpfs an
// earlier runner of the job left).
func unmountStale(dir string) error {
	for range 4 {
		if !isMountPoint(dir) {
			return nil
		}
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			return err
		}
	}
	return nil
}

// diskUsage is the used and total bytes of the file system at dir.
func diskUsage(dir string) (used, size int64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	size = int64(st.Blocks) * int64(st.Bsize)
	used = size - int64(st.Bfree)*int64(st.Bsize)
	return used, size, nil
}
