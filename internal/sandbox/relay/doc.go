// Package relay carries the only traffic that crosses a sandbox's network
// namespace, through Unix sockets the runner owns outside it (the
// sandbox's init, package guest, listens on loopback inside and connects
// to them):
//
//   - OBS: Serve relays each connection to the server's S3 endpoint
//     (DialURL; TLS when it is https), so user code reaches OBS at
//     http://127.0.0.1:9000 with its temporary credentials and nothing
//     else on the host.
//   - Egress: Proxy is an HTTP proxy (CONNECT and absolute-form http://)
//     that resolves a destination once, checks every address with Policy
//     — the package indexes named in an engine's pip_args for installs,
//     and with `network: full` any public address: never loopback,
//     link-local (cloud metadata), multicast or the host's own addresses —
//     and connects to the address it checked, so a name cannot be rebound
//     in between.
//
// Inbound traffic (the gateway to a service instance) uses ListenUnix and
// DialUnix: the runner binds the instance's socket in the instance dir and
// passes the listening descriptor into the sandbox. Both work with paths
// longer than sun_path by going through /proc/self/fd of the directory.
package relay
