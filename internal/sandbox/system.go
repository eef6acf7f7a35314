package sandbox

import (
	"fmt"
	"strings"
)

// The host paths every sandbox sees read-only (when they exist): the
// system's programs and libraries, and the few files of /etc they read.
// Everything else of the host is absent: the sandbox's root is an empty,
// read-only tmpfs with these and the spec's mounts on it.
var (
	// systemDirs are bound read-only at the same path.
	systemDirs = []string{"/usr"}
	// topLinks are re-made as the same symlinks when they are symlinks on
	// the host (merged /usr), bound read-only when they are directories.
	topLinks = []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}
	// etcPaths are bound read-only (symlinks re-made): nothing in them is
	// a secret, and the host's permissions still apply to the sandbox uid.
	// /etc/passwd, /etc/group and /etc/hosts are synthetic (EtcFiles).
	etcPaths = []string{
		"/etc/alternatives", "/etc/ld.so.cache", "/etc/ssl", "/etc/ca-certificates",
		"/etc/localtime", "/etc/timezone", "/etc/nsswitch.conf",
		"/etc/mime.types", "/etc/services", "/etc/protocols", "/etc/fonts",
	}
	// etcGlobs are etcPaths by pattern (the interpreter's own config:
	// Debian's sitecustomize lives in /etc/python3.N).
	etcGlobs = []string{"python3*"}
)

// Paths the platform uses inside every sandbox.
const (
	// GuestHome is the sandbox's home directory.
	GuestHome = "/home/" + GuestName
	// GuestBinary is where the atelier binary is bound read-only, for the
	// sandbox's init (`atelier sandbox-init`).
	GuestBinary = "/opt/atelier/bin/atelier"
	// GuestRunDir holds the Unix sockets the runner serves (OBS, the
	// egress proxy), bound read-only.
	GuestRunDir = "/run/atelier"
	// GuestHostname is the sandbox's host name.
	GuestHostname = "atelier"
)

// EtcFiles are the synthetic /etc/passwd, /etc/group and /etc/hosts of a
// sandbox: root, ma-user (GuestUID, GuestGID, home GuestHome) and nobody;
// the host name and localhost on the loopback addresses.
func EtcFiles() []File {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/usr/sbin/nologin\n"+
		"%s:x:%d:%d:%s:%s:/bin/bash\n"+
		"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n", GuestName, GuestUID, GuestGID, GuestName, GuestHome)
	group := fmt.Sprintf("root:x:0:\nusers:x:%d:%s\nnogroup:x:65534:\n", GuestGID, GuestName)
	hosts := strings.Join([]string{
		"127.0.0.1\tlocalhost " + GuestHostname,
		"::1\tlocalhost ip6-localhost ip6-loopback",
		"",
	}, "\n")
	return []File{
		{Dst: "/etc/passwd", Data: []byte(passwd)},
		{Dst: "/etc/group", Data: []byte(group)},
		{Dst: "/etc/hosts", Data: []byte(hosts)},
		{Dst: "/etc/hostname", Data: []byte(GuestHostname + "\n")},
	}
}
