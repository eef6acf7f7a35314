package app

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/capacity"
	"github.com/atelier-dev/atelier/internal/config"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/executor/local"
	"github.com/atelier-dev/atelier/internal/job"
	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/notebook"
	"github.com/atelier-dev/atelier/internal/notebook/proxy"
	"github.com/atelier-dev/atelier/internal/serving"
)

// notebooks are notebooks by role, and the notebook listener's handler.
type notebooks struct {
	api        *notebook.Notebooks  // the REST operations
	runners    *notebook.Runners    // the runner protocol; the proxy's resolver
	controller *notebook.Controller // the loop: Run; the proxy's activity
	proxy      *proxy.Proxy         // served on --notebook-listen
}

// tokenAuth authenticates an X-Auth-Token on the notebook listener.
type tokenAuth struct{ iam *auth.Service }

func (a tokenAuth) Authenticate(r *http.Request) (string, error) {
	tok := r.Header.Get("X-Auth-Token")
	if tok == "" {
		return "", nil
	}
	p, err := a.iam.AuthenticateToken(r.Context(), tok)
	if err != nil {
		return "", err
	}
	return p.User.ID, nil
}

// sessionKey is the key of notebook session cookies: derived from the
// master key, so sessions survive a restart and no other use of the
// master key shares it.
func sessionKey(master []byte) []byte {
	m := hmac.New(sha256.New, master)
	m.Write([]byte("atelier notebook sessions v1"))
	return m.Sum(nil)
}

// notebookBaseURL is the notebook listener's URL for links: its bound
// address, or, when it listens on every address, the advertised API
// host with its port.
func notebookBaseURL(cfg *config.Server, ln net.Listener) string {
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
		if u, err := url.Parse(cfg.AdvertiseURL); err == nil && u.Hostname() != "" {
			host = u.Hostname()
		}
	}
	return "http://" + net.JoinHostPort(host, port)
}

// newNotebooks wires notebooks: the same flavors, engines, sandbox,
// executor and capacity ledger as jobs and services; the proxy resolves
// notebooks through the runner protocol's view and tells the controller
// what users do.
func newNotebooks(cfg *config.Server, iso *isolation, store meta.Store, iam *auth.Service, jobs *job.Jobs, ledger *capacity.Ledger,
	apiAddr, s3URL, nbURL string, master []byte, log *slog.Logger) (*notebooks, error) {
	const op errs.Op = "app.newNotebooks"
	self, err := iso.runnerBinary()
	if err != nil {
		return nil, errs.E(op, errs.Internal, "cannot find the atelier binary for the runner", err)
	}
	engines := jobs.Engines()
	def := ""
	for _, e := range engines {
		if e.Name == "pytorch" {
			def = e.Name
		}
	}
	if def == "" && len(engines) > 0 {
		def = engines[0].Name
	}
	nb := cfg.Notebooks
	logins := proxy.NewLogins(time.Now)
	o := notebook.Options{Flavors: jobs.Flavors(), Engines: engines, DefaultEngine: def, PerUser: cfg.Quotas.NotebooksPerUser,
		IdleStop: time.Duration(*nb.IdleStop), Warning: time.Duration(nb.IdleWarning), IdleCPU: nb.IdleCPUThreshold,
		Volume: int64(nb.Volume), MaxVolume: int64(nb.MaxVolume), Sandbox: cfg.Sandbox, SandboxUser: cfg.SandboxUser,
		SandboxError: iso.err, RemoveAll: iso.sb.Identity().RemoveAll, WorkDir: cfg.WorkDir, DataDir: cfg.DataDir,
		ServerURL: advertiseURL(cfg, apiAddr), NotebookURL: nbURL, Domain: cfg.NotebookDomain, S3Endpoint: s3URL, Region: cfg.Region,
		RunnerArgv0: self, Ledger: ledger, Code: jobs, Logger: log}
	api, runners, ctl := notebook.New(store, iam, iam, local.New(local.Options{Logger: log}), logins, o)
	px, err := proxy.New(proxy.Options{Resolver: runners, Authenticator: tokenAuth{iam}, Activity: ctl, Logins: logins, Sessions: runners,
		SessionKey: sessionKey(master), Logger: log, Domain: cfg.NotebookDomain})
	if err != nil {
		return nil, errs.E(op, err)
	}
	if cfg.NotebookDomain == "" {
		log.Info("notebooks share one origin on the notebook listener; set notebook_domain (wildcard DNS) to give each its own",
			"notebook_url", nbURL)
	}
	return &notebooks{api: api, runners: runners, controller: ctl, proxy: px}, nil
}

// advertiseURL is how runners reach the REST API: advertise_url, unless
// it is the default made of a --listen that picked its port (:0), then
// the bound address.
func advertiseURL(cfg *config.Server, apiAddr string) string {
	a := cfg.AdvertiseURL
	if a == "" || a == "http://"+cfg.Listen || strings.HasSuffix(a, ":0") {
		a = "http://" + apiAddr
	}
	return a
}

// notebookMeter gives usage (internal/serving) the notebooks' runs.
type notebookMeter struct{ n *notebook.Notebooks }

func (m notebookMeter) NotebookUsage(ctx context.Context, p *auth.Principal, ownerID string) ([]serving.NotebookRun, []serving.NotebookIdle, error) {
	runs, idle, err := m.n.Usage(ctx, p, ownerID)
	if err != nil {
		return nil, nil, err
	}
	out := make([]serving.NotebookRun, len(runs))
	for i, r := range runs {
		out[i] = serving.NotebookRun(r)
	}
	idl := make([]serving.NotebookIdle, len(idle))
	for i, r := range idle {
		idl[i] = serving.NotebookIdle(r)
	}
	return out, idl, nil
}
