package webui

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
)

//go:embed static
var static embed.FS

// Prefix is where the console is served.
const Prefix = "/console/"

// CSP is the console's Content-Security-Policy: its own scripts, styles
// and API only; images also from blob: (uploads previewed before they are
// sent) and data: (uPlot's legend markers). A console that knows the S3
// endpoint's origin also connects there (CSPWith).
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; " +
	"connect-src 'self'; font-src 'self'; manifest-src 'self'; frame-ancestors 'none'; base-uri 'none'; " +
	"form-action 'self'; object-src 'none'"

// CSPWith is CSP whose connect-src also names the origins (the S3
// endpoint the console POSTs small uploads to). Origins that are not
// exactly scheme://host[:port] are left out.
func CSPWith(origins ...string) string {
	extra := ""
	for _, o := range origins {
		if validOrigin(o) {
			extra += " " + o
		}
	}
	return strings.Replace(CSP, "connect-src 'self';", "connect-src 'self'"+extra+";", 1)
}

// validOrigin reports whether o is scheme://host[:port] and nothing that
// could end or widen a CSP source list.
func validOrigin(o string) bool {
	u, err := url.Parse(o)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Hostname() != "" &&
		o == u.Scheme+"://"+u.Host && !strings.ContainsAny(o, " ;,'*\"\\")
}

// Options configure the console's handler.
type Options struct {
	// S3Origin is the origin of the S3 endpoint as browsers reach it
	// (from the server's configuration, never from a request): the
	// console uploads small files there. "": not known, the console
	// uploads through the REST API only.
	S3Origin string
}

type file struct {
	body  []byte
	etag  string
	ctype string
}

// Handler serves the console's files.
type Handler struct {
	files map[string]file // by path under static/, "index.html", "js/main.js"
	csp   string
}

// New reads the embedded files once.
func New(o Options) *Handler {
	h := &Handler{files: map[string]file{}, csp: CSPWith(o.S3Origin)}
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err)
	}
	err = fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(sub, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		ct := mime.TypeByExtension(path.Ext(p))
		switch path.Ext(p) {
		case ".mjs", ".js":
			ct = "text/javascript; charset=utf-8"
		case ".md":
			ct = "text/plain; charset=utf-8"
		case "":
			ct = "text/plain; charset=utf-8"
		}
		h.files[p] = file{body: b, etag: `"` + hex.EncodeToString(sum[:12]) + `"`, ctype: ct}
		return nil
	})
	if err != nil {
		panic(err) // the embedded tree is part of the binary
	}
	return h
}

// Files lists the served paths (tests).
func (h *Handler) Files() []string {
	out := make([]string, 0, len(h.files))
	for p := range h.files {
		out = append(out, p)
	}
	return out
}

// securityHeaders are set on every console response.
func (h *Handler) securityHeaders(w http.ResponseWriter) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", h.csp)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "same-origin")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	hd.Set("Cross-Origin-Resource-Policy", "same-origin")
	hd.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=(), payment=()")
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.securityHeaders(w)
	rel, ok := strings.CutPrefix(r.URL.Path, Prefix)
	if !ok {
		http.NotFound(w, r)
		return
	}
	f, found := h.files[rel]
	if !found {
		if rel == "" || path.Ext(rel) == "" {
			f = h.files["index.html"] // an app route
		} else {
			http.Error(w, "no such console file: "+r.URL.Path, http.StatusNotFound)
			return
		}
	}
	w.Header().Set("Content-Type", f.ctype)
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("ETag", f.etag)
	if match := r.Header.Get("If-None-Match"); match != "" && match == f.etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(f.body)))
	if r.Method == http.MethodHead {
		return
	}
	w.Write(f.body)
}
