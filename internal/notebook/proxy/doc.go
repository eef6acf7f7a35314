// Package proxy is the notebook listener's handler (--notebook-listen, an
// origin of its own): it lets a notebook's owner, and no one else, reach
// the notebook's Jupyter (Notebook 6, base_url /notebooks/{id}/) on the
// Unix socket in its dir.
//
// A request to /notebooks/{id}/… is authenticated by an X-Auth-Token
// (Authenticator; for scripts) or by the session cookie atelier_nb, which
// a login link sets: the API mints a link with Logins.Mint (256 random
// bits, only their hash kept, in memory, one use, 60 s) and GET
// /notebooks/{id}/login?code=… redeems it, sets the cookie (Path
// /notebooks/{id}/, HttpOnly, SameSite=Lax, Secure over TLS; an
// HMAC-SHA256-signed notebook id, user id and expiry, 12 h, under a key
// that outlives restarts) and redirects (303) to /notebooks/{id}/tree,
// a URL without the code. The code is never logged. The REST API never
// accepts this cookie: it is another cookie on another origin. The cookie
// records when it was issued; a sign-out (Sessions.EndSessions, which
// /notebooks/{id}/logout — Jupyter's Logout button — calls for the
// owner, as does the API's sign-out) makes Target report that time, and
// cookies issued then or before are refused (401) from the next request.
// GET /notebooks/{id}/logout only answers a page whose buttons POST the
// sign-out (this browser, or every browser), so no cross-site link or
// image can sign anyone out; a cookie issued in the future (beyond a
// minute: a clock stepped back) is refused. An open websocket is checked
// again every Options.Recheck (30 s) and closed with 1008 once its session
// is signed out, the notebook changes owner or stops.
//
// Then, in order: no credentials 401, refused ones 401; a state-changing
// method or a websocket upgrade whose Origin (or Referer) is not this
// listener's origin 403 (Jupyter skips its XSRF check for token-
// authenticated requests, so this is the CSRF check; a request with
// neither passes only with an X-Auth-Token); unknown id 404; another
// user's notebook 403; a notebook not running 503 with its status.
// Paths with dot segments (%2e%2e too), empty segments, encoded slashes
// or an escaped id are refused (400) before anything else, so a path
// never names another notebook than the one checked. Errors are plain
// text: "ATL.NB.NNNN: message", and a hint line.
//
// HTTP is streamed to Jupyter with httputil.ReverseProxy: the client's
// Authorization, X-Auth-Token and atelier_nb cookie are dropped (other
// cookies, Jupyter's _xsrf, pass), "Authorization: token <Jupyter
// token>" is added, the browser's Host kept, hop-by-hop headers dropped;
// Jupyter cannot set atelier_nb. Websockets (kernel channels, terminals)
// are terminated on both sides (gorilla/websocket): the proxy dials
// Jupyter first, passes its subprotocol on, relays messages streamed and
// typed, each at most MaxMessage (64 MiB), and passes close codes on.
// The head of each text message the browser sends is read for Activity:
// an execute_request on a kernel channel, ["stdin", …] on a terminal.
//
// All notebooks share this one origin, and only the owner may load a
// notebook's pages: do not add sharing without an origin per notebook,
// since a notebook's pages (user code) could script the others.
package proxy
