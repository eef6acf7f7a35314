// Package userfs reads directories that hostile user code can write into
// (job outputs, metrics and ready files, notebook volumes) from a runner that
// runs as root, without ever following a link planted there.
//
// Threat: at any moment user code may replace any file or directory beneath
// such a Dir by a symbolic link (to the host's data dir, say), a FIFO (a plain
// open would block forever), a socket or a device node, and it may do so
// between the runner's scan and its open.
//
// Guarantees: a Dir is an open directory descriptor; everything beneath it
// is resolved relative to that descriptor, never by path. Open, ReadFile and
// Sub follow no symbolic link in any component (a link to a file inside the
// Dir is refused too), never leave the Dir, never cross into another mount,
// never block (O_NONBLOCK; cleared again once fstat has said "regular file",
// where it would have had no effect anyway), and hand back only regular files
// (Sub: directories) on the Dir's device. Walk reads every directory through
// a descriptor opened relative to its parent's with O_NOFOLLOW, so a
// directory swapped for a link mid-walk is skipped, never entered. Refusals
// are errs errors (PermissionDenied, Invalid for bad paths) wrapping ErrLink,
// ErrNotRegular, ErrOtherDevice or ErrBadPath; their user messages name only
// the relative path, never the host path.
//
// Paths are slash-separated and relative. Redundant separators, "." and a
// trailing slash are cleaned away ("./a//b/" is "a/b"); an empty path, one
// naming the Dir itself, an absolute path, any ".." component and NUL are
// refused (ErrBadPath).
//
// Fast path: one openat2(2) with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|
// RESOLVE_NO_MAGICLINKS|RESOLVE_NO_XDEV, then fstat. Fallback, where openat2
// is missing or filtered (decided once per process by a probe at the first
// OpenDir): one openat(O_DIRECTORY|O_NOFOLLOW) per component, each checked
// with fstat for st_dev and, where statx reports it, for the mount id (so
// bind mounts of the same file system are refused as openat2 refuses them).
// When the fast path refuses, the fallback walk is run to say which
// component was at fault; it never turns a refusal into success.
//
// Not protected: hard links (user code cannot link to host files across the
// sandbox's bind mounts, and the job's own files are its to share); device
// nodes are opened (non-blocking, without a controlling tty) before fstat
// refuses them, but unprivileged user code cannot create any (no CAP_MKNOD).
// Content may change while it is read, and a file Walk reported may be gone
// or different by the time it is opened: callers must treat both as
// untrusted data. Walk reports files by fstatat and checks only st_dev for
// them; Open is what refuses a file bind-mounted into the tree.
//
// Linux only.
package userfs
