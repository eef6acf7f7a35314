package userfs

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/atelier-dev/atelier/internal/errs"
)

// Sentinel causes of a refusal, for errors.Is. Every error of this package
// that carries one is an errs error of kind PermissionDenied (ErrBadPath:
// Invalid) whose message names the relative path.
var (
	// ErrLink: a component of the path is a symbolic link.
	ErrLink = errors.New("symbolic link refused")
	// ErrNotRegular: the file is not of the type wanted: a FIFO, socket,
	// device or directory where a regular file was wanted, or a component
	// that is not a directory where one was wanted.
	ErrNotRegular = errors.New("not a regular file")
	// ErrOtherDevice: the path crosses into another mount.
	ErrOtherDevice = errors.New("on another file system")
	// ErrBadPath: the relative path is empty, absolute, has a ".."
	// component or a NUL byte, or is too long.
	ErrBadPath = errors.New("bad relative path")
)

// reason is why resolving a path failed.
type reason uint8

const (
	rIO        reason = iota // another error; errno says which
	rNotExist                // a component does not exist
	rDenied                  // EACCES or EPERM on a file of the right type
	rLink                    // a component is a symbolic link
	rNotDir                  // a component that must be a directory is not one
	rFIFO                    // the file is a FIFO
	rSocket                  // the file is a socket
	rDevice                  // the file is a device node
	rDirectory               // the file is a directory
	rIrregular               // the file is of another type
	rOtherDev                // a component is on another mount
	rBadPath                 // the name is too long for the kernel
)

// failure says which part of a path failed and why.
type failure struct {
	// at is the prefix of the path at fault: the whole path ("it"), a
	// directory on it, or "" when that is not known.
	at     string
	reason reason
	errno  error // the system's error, if any
}

// fromErrno is the failure an errno stands for when nothing more is known.
func fromErrno(at string, err error) *failure {
	f := &failure{at: at, errno: err}
	switch err {
	case unix.ENOENT:
		f.reason = rNotExist
	case unix.ELOOP:
		f.reason = rLink
	case unix.EXDEV:
		f.reason = rOtherDev
	case unix.ENOTDIR:
		f.reason = rNotDir
	case unix.ENXIO, unix.ENODEV:
		f.reason = rIrregular
	case unix.EACCES, unix.EPERM:
		f.reason = rDenied
	case unix.ENAMETOOLONG:
		f.reason = rBadPath
	default:
		f.reason = rIO
	}
	return f
}

// fromMode is the failure for a file of mode m where a regular file (or,
// when wantDir, a directory) was wanted, or nil when m is of that type.
func fromMode(at string, m uint32, wantDir bool) *failure {
	typ := m & unix.S_IFMT
	if wantDir {
		switch typ {
		case unix.S_IFDIR:
			return nil
		case unix.S_IFLNK:
			return &failure{at: at, reason: rLink}
		}
		return &failure{at: at, reason: rNotDir}
	}
	var r reason
	switch typ {
	case unix.S_IFREG:
		return nil
	case unix.S_IFLNK:
		r = rLink
	case unix.S_IFIFO:
		r = rFIFO
	case unix.S_IFSOCK:
		r = rSocket
	case unix.S_IFCHR, unix.S_IFBLK:
		r = rDevice
	case unix.S_IFDIR:
		r = rDirectory
	default:
		r = rIrregular
	}
	return &failure{at: at, reason: r}
}

// subject is how a message names f.at within rel.
func (f *failure) subject(rel string) string {
	if f.at == rel {
		return "it"
	}
	return show(f.at)
}

// err is f as the error of op on rel beneath the directory at host.
func (f *failure) err(op errs.Op, host, rel string) error {
	name := show(rel)
	var (
		kind     = errs.PermissionDenied
		sentinel error
		msg      string
	)
	switch f.reason {
	case rNotExist:
		kind, msg = errs.NotFound, name+" does not exist"
	case rDenied:
		msg = "cannot open " + name + ": permission denied"
	case rLink:
		sentinel = ErrLink
		if f.at == "" {
			msg = "refusing " + name + ": it or a directory on its path is a symbolic link"
		} else {
			msg = "refusing " + name + ": " + f.subject(rel) + " is a symbolic link"
		}
	case rNotDir:
		sentinel = ErrNotRegular
		if f.at == "" {
			msg = "refusing " + name + ": a component of its path is not a directory"
		} else {
			msg = "refusing " + name + ": " + f.subject(rel) + " is not a directory"
		}
	case rFIFO:
		sentinel, msg = ErrNotRegular, "refusing "+name+": it is a named pipe (FIFO), not a regular file"
	case rSocket:
		sentinel, msg = ErrNotRegular, "refusing "+name+": it is a socket, not a regular file"
	case rDevice:
		sentinel, msg = ErrNotRegular, "refusing "+name+": it is a device, not a regular file"
	case rDirectory:
		sentinel, msg = ErrNotRegular, "refusing "+name+": it is a directory, not a regular file"
	case rIrregular:
		sentinel, msg = ErrNotRegular, "refusing "+name+": it is not a regular file"
	case rOtherDev:
		sentinel = ErrOtherDevice
		if f.at == "" {
			msg = "refusing " + name + ": its path crosses into another file system"
		} else {
			msg = "refusing " + name + ": " + f.subject(rel) + " is on another file system"
		}
	case rBadPath:
		kind, sentinel, msg = errs.Invalid, ErrBadPath, "invalid path "+name+": a name in it is too long"
	default:
		kind, msg = errs.IO, "cannot open "+name
		if f.errno != nil {
			msg += ": " + f.errno.Error()
		}
	}
	cause := f.errno
	switch {
	case sentinel != nil && f.errno != nil:
		cause = fmt.Errorf("%w (%w)", sentinel, f.errno)
	case sentinel != nil:
		cause = sentinel
	case cause == nil:
		cause = errors.New(kind.String())
	}
	return errs.E(op, kind, msg, &fs.PathError{Op: "open", Path: filepath.Join(host, rel), Err: cause})
}

// badPath is the error of op for a relative path cleanRel refused.
func badPath(op errs.Op, rel, why string) error {
	return errs.E(op, errs.Invalid, "invalid path "+show(rel)+": "+why, ErrBadPath)
}
