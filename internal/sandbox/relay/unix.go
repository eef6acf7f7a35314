package relay

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/atelier-dev/atelier/internal/errs"
)

// Error codes of the relays (ATL.EXE.005N).
const (
	// CodeSocket: a Unix socket cannot be made or reached.
	CodeSocket errs.Code = "ATL.EXE.0050"
	// CodeRefused: the egress proxy refused a destination.
	CodeRefused errs.Code = "ATL.EXE.0051"
)

// maxSunPath is the longest socket path bind(2) takes (sun_path less
// the NUL).
const maxSunPath = 107

// ListenUnix makes a listening Unix socket at path (an old socket there is
// removed first) with mode perm. A path too long for sun_path is bound
// through its directory's /proc/self/fd entry, so work dirs of any depth
// work.
func ListenUnix(path string, perm os.FileMode) (*net.UnixListener, error) {
	const op errs.Op = "relay.ListenUnix"
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return nil, errs.E(op, errs.IO, CodeSocket, "cannot remove the old socket "+path, err)
	}
	var ln *net.UnixListener
	err := viaDir(path, func(addr string) error {
		l, err := net.ListenUnix("unix", &net.UnixAddr{Name: addr, Net: "unix"})
		ln = l
		return err
	})
	if err != nil {
		return nil, errs.E(op, errs.IO, CodeSocket, "cannot listen on "+path, err)
	}
	// The file is removed by the caller with its directory; Close must not
	// try to unlink the /proc name.
	ln.SetUnlinkOnClose(false)
	if err := os.Chmod(path, perm); err != nil {
		ln.Close()
		return nil, errs.E(op, errs.IO, CodeSocket, "cannot set the mode of "+path, err)
	}
	return ln, nil
}

// DialUnix connects to the Unix socket at path (of any length). It never
// follows a symlink at the socket's own name.
func DialUnix(ctx context.Context, d *net.Dialer, path string) (net.Conn, error) {
	var c net.Conn
	err := viaDir(path, func(addr string) error {
		var st unix.Stat_t
		if err := unix.Lstat(addr, &st); err != nil {
			return err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
			return fmt.Errorf("%s is not a socket", path)
		}
		var err error
		c, err = d.DialContext(ctx, "unix", addr)
		return err
	})
	return c, err
}

// viaDir calls fn with path, or with /proc/self/fd/N/<base> for a
// directory descriptor N of path's directory when path is too long.
func viaDir(path string, fn func(addr string) error) error {
	if len(path) <= maxSunPath {
		return fn(path)
	}
	dir, base := filepath.Split(path)
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	addr := "/proc/self/fd/" + strconv.Itoa(fd) + "/" + base
	if len(addr) > maxSunPath {
		return &os.PathError{Op: "bind", Path: path, Err: syscall.ENAMETOOLONG}
	}
	return fn(addr)
}
