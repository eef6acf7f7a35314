// Package webui is the console: the static files of a single-page app
// (plain ES modules written with preact + htm, charts by uPlot, vendored
// from npm by vendor.sh with their versions and licenses in
// static/vendor/VERSIONS.md), embedded with go:embed and served under
// /console/ by the API server. `go build` alone yields a binary with the
// console: there is no bundler and no Node at run time.
//
// The console speaks only the public REST API, authenticated by the
// console's session cookie (see apiserver/console.go: HttpOnly,
// SameSite=Strict, CSRF token on every state change). This package adds
// the headers that make the origin safe to render user data on: a strict
// Content-Security-Policy (no inline script, no eval, nothing loaded from
// elsewhere), nosniff, no framing, no referrer leaving the origin. Every
// user-supplied string is rendered as text by preact (never innerHTML).
//
// Paths that name a file serve it (with an ETag of its content); any
// other path under /console/ without an extension serves index.html, so
// the app's own URLs (/console/jobs/ID) can be bookmarked and reloaded.
package webui
