package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/atelier-dev/atelier/internal/config"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// ServerLockFile, in the data dir, is locked (flock) by the server that
// uses the dir and names it.
const ServerLockFile = "server.lock"

const hintOneServer = errs.Hint("stop the other server first: two servers must not share a data dir or a metadata store " +
	"(blobs are local to one server, and both would run the same jobs and services)")

// storeLocker is a metadata store that can make its server the only one
// on it (PostgreSQL, through an advisory lock).
type storeLocker interface {
	LockServer(ctx context.Context, holder string) (release func(), err error)
}

// lockServer makes this server the only one on its data dir, on a SQLite
// database outside it, and on a store that can lock; the error of a second
// server names the first one. release undoes it.
func lockServer(ctx context.Context, cfg *config.Server, store meta.Store) (release func(), err error) {
	const op errs.Op = "app.lockServer"
	host, _ := os.Hostname()
	holder := fmt.Sprintf("atelier server pid %d on %s", os.Getpid(), host)
	var releases []func()
	release = func() {
		for i := len(releases) - 1; i >= 0; i-- {
			releases[i]()
		}
	}
	files := []string{filepath.Join(cfg.DataDir, ServerLockFile)}
	if p, ok := strings.CutPrefix(cfg.MetaDSN, "sqlite://"); ok {
		files = append(files, p+".lock")
	}
	for _, f := range files {
		r, err := lockFile(f, holder+", started "+time.Now().UTC().Format(time.RFC3339))
		if err != nil {
			release()
			return nil, err
		}
		releases = append(releases, r)
	}
	if l, ok := store.(storeLocker); ok {
		r, err := l.LockServer(ctx, holder)
		if err != nil {
			release()
			if errs.Is(err, errs.Conflict) {
				return nil, errs.E(op, errs.Conflict, CodeInUse, hintOneServer, err)
			}
			return nil, errs.E(op, err)
		}
		releases = append(releases, r)
	}
	return release, nil
}

// lockFile takes an exclusive flock on path (created 0600) and writes
// holder into it; a file locked already answers with the holder it names.
// The lock ends with the process, however it ends.
func lockFile(path, holder string) (func(), error) {
	const op errs.Op = "app.lockFile"
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, errs.E(op, errs.IO, CodeDataDir, "cannot open the lock file "+path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			b := make([]byte, 512)
			n, _ := f.ReadAt(b, 0)
			who := strings.TrimSpace(string(b[:n]))
			if who == "" {
				who = "another atelier server"
			}
			return nil, errs.E(op, errs.Conflict, CodeInUse, hintOneServer,
				fmt.Sprintf("%s is in use by %s", filepath.Dir(path), who))
		}
		return nil, errs.E(op, errs.IO, CodeDataDir, "cannot lock "+path, err)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(holder+"\n"), 0)
	}
	return func() { f.Close() }, nil
}
