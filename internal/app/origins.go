package app

import (
	"net"
	"net/url"
	"slices"

	"github.com/atelier-dev/atelier/internal/config"
)

// browserOrigins are what browsers see of the server, from its
// configuration and its listeners (never from a request): the S3
// endpoint's origin ("" when the S3 listener binds every address and
// s3_advertise_url is not set — no browser URL is known then), and the
// origins the console is loaded from (console_origins, else those of
// advertise_url and of the API listener, a loopback one also as
// localhost).
func browserOrigins(cfg *config.Server, apiAddr, s3Addr string) (s3Origin string, console []string) {
	s3Origin = cfg.S3AdvertiseURL
	if s3Origin == "" {
		if host, _, err := net.SplitHostPort(s3Addr); err == nil && !unspecified(host) {
			s3Origin = "http://" + s3Addr
		}
	}
	if len(cfg.ConsoleOrigins) > 0 {
		return s3Origin, slices.Clone(cfg.ConsoleOrigins)
	}
	add := func(o string) {
		if config.IsOrigin(o) && !slices.Contains(console, o) {
			console = append(console, o)
		}
	}
	if u, err := url.Parse(advertiseURL(cfg, apiAddr)); err == nil {
		add(u.Scheme + "://" + u.Host)
	}
	if host, port, err := net.SplitHostPort(apiAddr); err == nil && !unspecified(host) {
		add("http://" + apiAddr)
		if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
			add("http://" + net.JoinHostPort("localhost", port))
		}
	}
	return s3Origin, console
}

// unspecified reports whether host is "", 0.0.0.0 or ::.
func unspecified(host string) bool {
	ip := net.ParseIP(host)
	return host == "" || ip != nil && ip.IsUnspecified()
}
