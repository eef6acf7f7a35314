package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/sync/errgroup"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/apiserver"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/blob/disk"
	"github.com/atelier-dev/atelier/internal/capacity"
	"github.com/atelier-dev/atelier/internal/cgroup"
	"github.com/atelier-dev/atelier/internal/config"
	"github.com/atelier-dev/atelier/internal/dataset"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/fastmd5"
	"github.com/atelier-dev/atelier/internal/job"
	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/meta/postgres"
	"github.com/atelier-dev/atelier/internal/meta/sqlite"
	"github.com/atelier-dev/atelier/internal/obs"
	"github.com/atelier-dev/atelier/internal/runner"
	"github.com/atelier-dev/atelier/internal/s3"
	"github.com/atelier-dev/atelier/internal/serving"
	"github.com/atelier-dev/atelier/internal/serving/gateway"
	"github.com/atelier-dev/atelier/internal/webui"
)

// Error codes of server start-up.
const (
	CodeDataDir errs.Code = "ATL.SRV.0001"
	CodeListen  errs.Code = "ATL.SRV.0002"
	CodeMetaDSN errs.Code = "ATL.SRV.0003"
	CodeInUse   errs.Code = "ATL.SRV.0004"
)

// AdminConfigFile is the client config the server writes for the admin.
const AdminConfigFile = "admin.yaml"

// ShutdownTimeout bounds graceful shutdown.
const ShutdownTimeout = 10 * time.Second

// Run starts the server with cfg and blocks until ctx ends or a component
// fails. Before it returns every listener is closed and the store released.
func Run(ctx context.Context, cfg *config.Server, version string, log *slog.Logger) error {
	const op errs.Op = "app.Run"
	started := time.Now()
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := prepareDataDir(cfg.DataDir, log); err != nil {
		return err
	}
	store, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer store.Close()
	unlock, err := lockServer(ctx, cfg, store)
	if err != nil {
		return err
	}
	defer unlock()
	if cfg.Sandbox == config.SandboxNone {
		log.Warn("sandbox: none — jobs and services will run without isolation from each other and from the server's files")
	}
	iso := newIsolation(ctx, cfg, log)
	// Runners trim the content cache they share to the configured size.
	if err := runner.WriteCachePolicy(cfg.WorkDir, api.CachePolicy{MaxBytes: int64(cfg.ContentCacheSize)}); err != nil {
		return err
	}

	key, err := auth.LoadOrCreateMasterKey(cfg.DataDir)
	if err != nil {
		return err
	}
	iam, err := auth.New(store, key, auth.Options{Logger: log})
	if err != nil {
		return err
	}
	ak, sk, err := iam.Bootstrap(ctx)
	if err != nil {
		return err
	}
	blobs, err := disk.Open(ctx, filepath.Join(cfg.DataDir, "objects"), disk.WithLogger(log),
		disk.WithReserve(int64(cfg.StorageReserve)))
	if err != nil {
		return err
	}
	defer blobs.Close()
	md5s := fastmd5.New(fastmd5.Options{})
	defer md5s.Close()
	log.Debug("ETag MD5 of large uploads", "simd_lanes", md5s.SIMD())
	holds := dataset.NewHolds(store) // the object versions dataset versions keep from lifecycle rules
	objects := obs.New(store, blobs, obs.Options{Region: cfg.Region, Logger: log, Users: iam, MD5: md5s, Holds: holds})

	apiLn, err := listen(cfg.Listen, "--listen")
	if err != nil {
		return err
	}
	defer apiLn.Close()
	s3Ln, err := listen(cfg.S3Listen, "--s3-listen")
	if err != nil {
		return err
	}
	defer s3Ln.Close()
	nbAddr := cfg.NotebookListen
	if nbAddr == "" {
		nbAddr = config.DefaultNotebookListen
	}
	nbLn, err := listen(nbAddr, "--notebook-listen")
	if err != nil {
		return err
	}
	defer nbLn.Close()

	adminPath := filepath.Join(cfg.DataDir, AdminConfigFile)
	admin := &config.ClientConfig{Endpoint: "http://" + apiLn.Addr().String(), S3Endpoint: "http://" + s3Ln.Addr().String(), AccessKey: ak, SecretKey: sk}
	if err := config.WriteClientConfig(adminPath, admin); err != nil {
		return errs.E(op, errs.IO, CodeDataDir, "cannot write "+adminPath, err)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Jobs and service instances share the machine through one ledger.
	ledger, sources := newLedger(cfg)
	log.Info("capacity", "cpu", ledger.Capacity().CPU, "memory", ledger.Capacity().Memory, "gpu", ledger.Capacity().GPU,
		"sources", fmt.Sprintf("%+v", sources), "bookable", fmt.Sprintf("%+v", ledger.Capacity().Total()))
	// The gateway (a request waits for a service scaled to zero) and the
	// ledger (capacity freed) wake the service controller through one
	// Wakeup, made before any of them. Datasets call services through the
	// gateway (auto-labeling), and jobs read datasets.
	wake := serving.NewWakeup()
	gw := gateway.New(gateway.Options{Authenticator: iam, Logger: log, Registry: reg, Demand: wake.Demand})
	datasets := newDatasetService(ctx, store, iam, objects, holds, gw, log)
	defer datasets.Close()
	jobs, err := newJobService(ctx, cfg, iso, store, iam, objects, ledger, datasets, apiLn.Addr().String(), "http://"+s3Ln.Addr().String(), log)
	if err != nil {
		return err
	}
	models := newModelService(ctx, cfg, iso, store, iam, objects, jobs.Jobs, log)
	services, err := newServing(ctx, cfg, iso, store, iam, jobs.Jobs, ledger, wake, models, gw, apiLn.Addr().String(), "http://"+s3Ln.Addr().String(), log)
	if err != nil {
		return err
	}
	nbs, err := newNotebooks(cfg, iso, store, iam, jobs.Jobs, ledger, apiLn.Addr().String(), "http://"+s3Ln.Addr().String(),
		notebookBaseURL(cfg, nbLn), key, log)
	if err != nil {
		return err
	}
	defer nbs.proxy.Close()
	services.deployments.MeterNotebooks(notebookMeter{nbs.api})
	ledger.OnFree(jobs.Controller.Kick)
	ledger.OnFree(wake.Kick)
	ledger.OnFree(nbs.controller.Kick)
	s3Origin, consoleOrigins := browserOrigins(cfg, apiLn.Addr().String(), s3Ln.Addr().String())
	api := apiserver.New(apiserver.Deps{Auth: iam, Store: store, Registry: reg, Logger: log, Region: cfg.Region, Version: version,
		Jobs:    apiserver.JobDeps{Submit: jobs.Jobs, Read: jobs.Jobs, Act: jobs.Jobs, Catalog: jobs.Jobs},
		Runners: apiserver.RunnerDeps{Feed: jobs.Runners, Reports: jobs.Runners}, Models: models, Datasets: datasets, Gateway: gw,
		Services: services.deployments, ServiceActivity: services.deployments, Usage: services.deployments, InstanceRunners: services.runners,
		Notebooks: nbs.api, NotebookRunners: nbs.runners,
		Capacity: capacity.NewView(ledger, iam, store, capacity.NewCgroupMeter(cgroup.Options{}), sources),
		Console:  webui.New(webui.Options{S3Origin: s3Origin}), OBS: objects, S3Endpoint: admin.S3Endpoint, S3Origin: s3Origin})

	servers := []*http.Server{
		{Handler: api, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)},
		{Handler: s3.NewServer(s3.Deps{OBS: objects, IAM: iam, Region: cfg.Region, Domain: cfg.S3Domain, Logger: log, Registry: reg,
			ConsoleOrigins: consoleOrigins}),
			ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)},
		{Handler: nbs.proxy, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)},
	}
	log.Info("atelier server started", "version", version, "api", admin.Endpoint, "s3", admin.S3Endpoint,
		"notebooks", notebookBaseURL(cfg, nbLn), "data_dir", cfg.DataDir, "meta", redactDSN(cfg.MetaDSN), "admin_config", adminPath)

	// One group runs every component; the first that fails ends them all,
	// and the server returns its error.
	g, gctx := errgroup.WithContext(ctx)
	// The gateway's Front takes the API listener's connections: it answers
	// inference requests with its own HTTP/1.1 loop and hands every other
	// connection to the API server.
	front := gw.NewFront(apiLn, gateway.FrontOptions{ReadHeaderTimeout: servers[0].ReadHeaderTimeout, IdleTimeout: servers[0].IdleTimeout})
	g.Go(func() error {
		if err := front.Serve(); err != nil {
			return errs.E(op, errs.IO, "serving "+apiLn.Addr().String(), err)
		}
		return nil
	})
	for i, ln := range []net.Listener{front.Fallback(), s3Ln, nbLn} {
		g.Go(func() error {
			if err := servers[i].Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return errs.E(op, errs.IO, "serving "+ln.Addr().String(), err)
			}
			return nil
		})
	}
	loop := func(run func(context.Context)) { g.Go(func() error { run(gctx); return nil }) }
	loop(func(ctx context.Context) { gcLoop(ctx, iam, jobs.Janitor, log) })
	loop(jobs.Controller.Run)
	loop(services.controller.Run)
	loop(nbs.controller.Run)
	loop(func(ctx context.Context) { objects.Background(ctx, time.Duration(cfg.LifecycleInterval), started) })
	// Shutdown, when the server is asked to stop or a component failed.
	g.Go(func() error {
		<-gctx.Done()
		log.Info("shutting down")
		sctx, scancel := context.WithTimeout(context.Background(), ShutdownTimeout)
		defer scancel()
		if err := front.Shutdown(sctx); err != nil {
			log.Warn("graceful shutdown of inference connections cut short", "err", err)
		}
		for _, srv := range servers {
			if err := srv.Shutdown(sctx); err != nil {
				log.Warn("graceful shutdown cut short", "err", err)
				srv.Close()
			}
		}
		return nil
	})
	if err := g.Wait(); err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}

// gcLoop removes expired tokens and temporary credentials, and what jobs
// leave behind (work dirs of ended or deleted jobs, uploaded code no job
// references), every 10 minutes; the jobs' part also once at start, for
// what a stopped server left.
func gcLoop(ctx context.Context, iam *auth.Service, janitor *job.Janitor, log *slog.Logger) {
	collectJobs := func() {
		if n, err := janitor.CollectGarbage(ctx); err != nil && ctx.Err() == nil {
			log.Warn("job garbage collection failed", "err", err)
		} else if n > 0 {
			log.Info("deleted uploaded code dirs no job references", "count", n)
		}
	}
	collectJobs()
	t := time.NewTicker(10 * time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := iam.CollectGarbage(ctx, 24*time.Hour); err != nil {
				log.Warn("credential garbage collection failed", "err", err)
			}
			collectJobs()
		}
	}
}

// prepareDataDir creates the data dir and proves it is writable. Its mode
// is 0711 — the sandbox's user must pass it on the way to work_dir, nobody
// may list it — and what it holds is the server's alone: the metadata
// database, the master key and admin.yaml 0600, objects/ 0700. Looser
// modes of an existing data dir are tightened with a log line.
func prepareDataDir(dir string, log *slog.Logger) error {
	const op errs.Op = "app.prepareDataDir"
	hint := errs.Hint("choose a writable directory with --data-dir")
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return errs.E(op, errs.IO, CodeDataDir, fmt.Sprintf("cannot create data dir %s: %v", dir, unwrapPathErr(err)), hint)
	}
	f, err := os.CreateTemp(dir, ".write-test-*")
	if err != nil {
		return errs.E(op, errs.IO, CodeDataDir, fmt.Sprintf("data dir %s is not writable: %v", dir, unwrapPathErr(err)), hint)
	}
	name := f.Name()
	f.Close()
	os.Remove(name)
	return tighten(dir, log)
}

// privateFiles are the data dir's files only the server may read.
var privateFiles = []string{"meta.db", "meta.db-wal", "meta.db-shm", auth.MasterKeyFile, AdminConfigFile}

// tighten sets the data dir's modes (see prepareDataDir).
func tighten(dir string, log *slog.Logger) error {
	const op errs.Op = "app.tighten"
	set := func(p string, want os.FileMode, exact bool) error {
		fi, err := os.Lstat(p)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return errs.E(op, errs.IO, CodeDataDir, fmt.Sprintf("cannot inspect %s: %v", p, unwrapPathErr(err)))
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return errs.E(op, errs.Invalid, CodeDataDir, fmt.Sprintf("%s is a symbolic link; the data dir's files must be real files", p),
				errs.Hint("replace the link by the file it points to"))
		}
		got := fi.Mode().Perm()
		next := got & want
		if exact {
			next = want
		}
		if got == next {
			return nil
		}
		if err := os.Chmod(p, next); err != nil {
			return errs.E(op, errs.IO, CodeDataDir, fmt.Sprintf("cannot set the mode of %s: %v", p, unwrapPathErr(err)))
		}
		log.Info("tightened the mode of a data dir entry", "path", p, "was", fmt.Sprintf("%04o", got), "now", fmt.Sprintf("%04o", next))
		return nil
	}
	if err := set(dir, 0o711, true); err != nil {
		return err
	}
	for _, f := range privateFiles {
		if err := set(filepath.Join(dir, f), 0o600, false); err != nil {
			return err
		}
	}
	return set(filepath.Join(dir, "objects"), 0o700, true)
}

func unwrapPathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func openStore(ctx context.Context, cfg *config.Server) (meta.Store, error) {
	dsn := cfg.MetaDSN
	switch {
	case dsn == "" || dsn == "sqlite":
		return sqlite.Open(ctx, filepath.Join(cfg.DataDir, "meta.db"))
	case strings.HasPrefix(dsn, "sqlite://"):
		return sqlite.Open(ctx, strings.TrimPrefix(dsn, "sqlite://"))
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		return postgres.Open(ctx, dsn)
	}
	return nil, errs.E("app.openStore", errs.Invalid, CodeMetaDSN, fmt.Sprintf("--meta %q is not a store DSN", redactDSN(dsn)),
		errs.Hint("use postgres://user:password@host:port/db, sqlite:///path/meta.db, or omit --meta for SQLite in the data dir"))
}

// redactDSN hides a password in a DSN for logs and messages.
func redactDSN(dsn string) string {
	if dsn == "" {
		return "sqlite (data dir)"
	}
	scheme, rest, ok := strings.Cut(dsn, "://")
	if !ok {
		return dsn
	}
	userinfo, host, ok := strings.Cut(rest, "@")
	if !ok {
		return dsn
	}
	if user, _, hasPw := strings.Cut(userinfo, ":"); hasPw {
		userinfo = user + ":xxxxx"
	}
	return scheme + "://" + userinfo + "@" + host
}

func listen(addr, flag string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		hint := "pick a free address with " + flag + " HOST:PORT (port 0 picks one)"
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, errs.E("app.listen", errs.Unavailable, CodeListen, fmt.Sprintf("cannot listen on %s: the address is already in use", addr), errs.Hint(hint))
		}
		return nil, errs.E("app.listen", errs.Unavailable, CodeListen, fmt.Sprintf("cannot listen on %s: %v", addr, unwrapNetErr(err)), errs.Hint(hint))
	}
	return ln, nil
}

func unwrapNetErr(err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) {
		return oe.Err
	}
	return err
}
