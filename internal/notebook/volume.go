package notebook

import (
	"log/slog"
	"path/filepath"
	"syscall"
)

// VolumeDir is the name of a notebook's volume in its dir: the runner
// mounts the volume image there (or uses the dir itself).
const VolumeDir = "volume"

// unmountVolume detaches a volume image a killed runner left mounted in
// dir, so that the dir can be removed. The volume's entry is in dir,
// which only the server writes: user code cannot put a symlink there.
func unmountVolume(dir string, log *slog.Logger) {
	p := filepath.Join(dir, VolumeDir)
	for range 4 {
		var a, b syscall.Stat_t
		if syscall.Lstat(p, &a) != nil || syscall.Lstat(dir, &b) != nil || a.Dev == b.Dev {
			return
		}
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil {
			log.Warn("unmounting a notebook volume", "path", p, "err", err)
			return
		}
	}
}
