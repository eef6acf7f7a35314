package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
)

// DefaultUser is the host account user code runs as when the server is
// root (config key sandbox_user).
const DefaultUser = "atelier"

// The account user code has inside the sandbox, as in ModelArts.
const (
	GuestUID  = 1000
	GuestGID  = 100
	GuestName = "ma-user"
)

// How an Identity becomes user code's host uid.
const (
	// IdentityDrop: the server is root; the child drops to UID/GID before
	// bwrap runs, and bwrap maps only that uid into its user namespace.
	IdentityDrop = "drop"
	// IdentitySubUID: the server is not root; util-linux's unshare makes a
	// user namespace whose uid 0 is the first subordinate uid of the
	// server's account (/etc/subuid, through the setuid helpers newuidmap
	// and newgidmap) and whose gid 0 is the server's own primary gid
	// (which the server shares with user code's files), and execs bwrap
	// there as that uid 0; bwrap maps ma-user onto it.
	IdentitySubUID = "subuid"
	// IdentityNone: sandbox "none": user code runs as the server.
	IdentityNone = "none"
)

// Identity is who user code is on the host.
type Identity struct {
	Mode string
	// UID and GID are user code's host ids (the server's with
	// IdentityNone).
	UID, GID int
	// Name says who that is, for logs and messages ("atelier",
	// "subordinate uid 100000 of alice").
	Name string
	// Unshare is util-linux's unshare (2.38 or later), which maps the
	// subordinate uid with newuidmap/newgidmap (IdentitySubUID).
	Unshare string
}

// Describe is a line for the server's log.
func (id Identity) Describe() string {
	switch id.Mode {
	case IdentityDrop:
		return fmt.Sprintf("user code runs as %s (uid %d, gid %d) in a user namespace, as %s inside", id.Name, id.UID, id.GID, GuestName)
	case IdentitySubUID:
		return fmt.Sprintf("user code runs as %s (gid %d) in a user namespace, as %s inside", id.Name, id.GID, GuestName)
	}
	return fmt.Sprintf("user code runs as the server itself (uid %d): there is no sandbox", id.UID)
}

// ResolveOptions choose the identity.
type ResolveOptions struct {
	// User is the sandbox account for a root server (default DefaultUser).
	User string
	// Create lets a root server create a missing User with `useradd
	// --system` (the server does; the runner only looks it up).
	Create bool
	// Log is told when the account is created.
	Log func(msg string)
}

// ResolveIdentity decides who user code is: a root server uses the
// account User (created when missing and Create is set); another server
// needs a subordinate uid range in /etc/subuid and /etc/subgid and the
// newuidmap/newgidmap helpers (package uidmap). The error says what is
// missing and how to add it.
func ResolveIdentity(ctx context.Context, o ResolveOptions) (Identity, error) {
	const op errs.Op = "sandbox.ResolveIdentity"
	if o.User == "" {
		o.User = DefaultUser
	}
	if os.Geteuid() == 0 {
		u, err := lookupAccount(o.User)
		if err != nil && o.Create {
			if cerr := createAccount(ctx, o.User); cerr != nil {
				return Identity{}, errs.E(op, cerr)
			}
			if o.Log != nil {
				o.Log(fmt.Sprintf("created the system account %q that user code runs as (useradd --system)", o.User))
			}
			u, err = lookupAccount(o.User)
		}
		if err != nil {
			return Identity{}, errs.E(op, errs.Unavailable, CodeIdentity,
				fmt.Sprintf("the sandbox account %q does not exist", o.User), errs.Hint("create it with `useradd --system --no-create-home "+o.User+
					"`, or name another one with sandbox_user in the server config"), err)
		}
		if u.uid == 0 || u.gid == 0 {
			return Identity{}, errs.E(op, errs.Invalid, CodeIdentity,
				fmt.Sprintf("the sandbox account %q has uid %d and gid %d; user code must never be root", o.User, u.uid, u.gid),
				errs.Hint("name an unprivileged account with sandbox_user"))
		}
		return Identity{Mode: IdentityDrop, UID: u.uid, GID: u.gid, Name: o.User}, nil
	}
	return resolveSubUID(os.Getuid(), os.Getgid())
}

func resolveSubUID(uid, gid int) (Identity, error) {
	const op errs.Op = "sandbox.ResolveIdentity"
	name := strconv.Itoa(uid)
	if u, err := user.LookupId(name); err == nil {
		name = u.Username
	}
	hint := errs.Hint(fmt.Sprintf("give the server's account a subordinate id range (as root: `usermod --add-subuids 100000-165535 --add-subgids 100000-165535 %s`) "+
		"and install newuidmap/newgidmap (Debian: apt-get install uidmap), or run the server as root; see docs/security.md", name))
	sub, err := readSubIDs("/etc/subuid", name, uid)
	if err != nil {
		return Identity{}, errs.E(op, errs.Unavailable, CodeIdentity,
			fmt.Sprintf("the server runs as %s (uid %d), not root, and has no subordinate uid range for user code", name, uid), hint, err)
	}
	if _, err := readSubIDs("/etc/subgid", name, uid); err != nil {
		return Identity{}, errs.E(op, errs.Unavailable, CodeIdentity,
			fmt.Sprintf("the server runs as %s (uid %d), not root, and has no subordinate gid range", name, uid), hint, err)
	}
	for _, prog := range []string{"newuidmap", "newgidmap"} {
		if _, err := lookProg(prog); err != nil {
			return Identity{}, errs.E(op, errs.Unavailable, CodeIdentity, prog+" is not installed", hint)
		}
	}
	unshare, err := lookProg("unshare")
	if err == nil {
		err = checkUnshare(unshare)
	}
	if err != nil {
		return Identity{}, errs.E(op, errs.Unavailable, CodeIdentity, "util-linux's unshare 2.38 or later is needed (for --map-users): "+err.Error(),
			errs.Hint("install util-linux 2.38 or later, or run the server as root"))
	}
	if groups, err := os.Getgroups(); err == nil {
		for _, g := range groups {
			if g != gid {
				return Identity{}, errs.E(op, errs.Invalid, CodeIdentity,
					fmt.Sprintf("the server's account %s is in group %d besides its own: user code would keep it", name, g),
					errs.Hint("run the server as an account that is in no other group (as root: `usermod -G \"\" "+name+"`)"))
			}
		}
	}
	if sub.Start == uid {
		return Identity{}, errs.E(op, errs.Invalid, CodeIdentity, "the subordinate uid range of "+name+" starts at the server's own uid", hint)
	}
	return Identity{Mode: IdentitySubUID, UID: sub.Start, GID: gid, Name: fmt.Sprintf("subordinate uid %d of %s", sub.Start, name),
		Unshare: unshare}, nil
}

// lookProg finds a system program on PATH or in /usr/bin, /usr/sbin, /bin.
func lookProg(name string) (string, error) {
	for _, d := range []string{"/usr/bin", "/usr/sbin", "/bin", "/sbin"} {
		p := d + "/" + name
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return exec.LookPath(name)
}

// checkUnshare makes sure unshare knows --map-users (util-linux 2.38).
func checkUnshare(prog string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, prog, "--help").CombinedOutput()
	if err != nil && len(out) == 0 {
		return err
	}
	if !bytes.Contains(out, []byte("--map-users")) {
		return fmt.Errorf("%s has no --map-users", prog)
	}
	return nil
}

// SubIDRange is one line of /etc/subuid or /etc/subgid.
type SubIDRange struct{ Start, Count int }

func readSubIDs(path, name string, id int) (SubIDRange, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return SubIDRange{}, err
	}
	r, ok := ParseSubIDs(b, name, id)
	if !ok {
		return SubIDRange{}, fmt.Errorf("%s has no range for %s", path, name)
	}
	return r, nil
}

// ParseSubIDs finds the first usable range of account name (or numeric
// id) in the text of /etc/subuid or /etc/subgid ("name:start:count"
// lines).
func ParseSubIDs(b []byte, name string, id int) (SubIDRange, bool) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, ":")
		if len(f) != 3 || (f[0] != name && f[0] != strconv.Itoa(id)) {
			continue
		}
		start, err1 := strconv.Atoi(f[1])
		count, err2 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil || start <= 0 || count < 1 || start > 1<<31-2 {
			continue
		}
		return SubIDRange{Start: start, Count: count}, true
	}
	return SubIDRange{}, false
}

type account struct{ uid, gid int }

func lookupAccount(name string) (account, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return account{}, err
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil {
		return account{}, fmt.Errorf("account %s has non-numeric ids %s:%s", name, u.Uid, u.Gid)
	}
	return account{uid: uid, gid: gid}, nil
}

// createAccount runs useradd --system for the sandbox account.
func createAccount(ctx context.Context, name string) error {
	const op errs.Op = "sandbox.createAccount"
	if !validAccount(name) {
		return errs.E(op, errs.Invalid, CodeIdentity, fmt.Sprintf("%q is not an account name", name),
			errs.Hint("sandbox_user is a user name such as atelier"))
	}
	prog, err := exec.LookPath("useradd")
	if err != nil {
		for _, p := range []string{"/usr/sbin/useradd", "/sbin/useradd"} {
			if _, serr := os.Stat(p); serr == nil {
				prog, err = p, nil
				break
			}
		}
	}
	if err != nil {
		return errs.E(op, errs.Unavailable, CodeIdentity, fmt.Sprintf("the sandbox account %q does not exist and useradd is not installed", name),
			errs.Hint("create the account yourself, or install the passwd package"))
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, "--system", "--no-create-home", "--home-dir", "/nonexistent",
		"--shell", "/usr/sbin/nologin", "--user-group", name)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return errs.E(op, errs.Unavailable, CodeIdentity,
			fmt.Sprintf("cannot create the sandbox account %q: useradd: %s", name, firstLine(strings.TrimSpace(out.String()))),
			errs.Hint("create it yourself with `useradd --system "+name+"`"), err)
	}
	return nil
}

func validAccount(s string) bool {
	if s == "" || len(s) > 32 || s[0] == '-' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}
