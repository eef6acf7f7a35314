// Command console measures the training-job pages of the web console at
// scale: a server whose store holds N jobs (seeded straight into its
// SQLite metadata store, see seed) and one job with P metric points, and,
// as the baseline in the same run, a server with 10 jobs and 100 points.
// For each it times, in Chromium (chromedp, as the e2e tests), from the
// navigation to the list page ready (data-state=ready, rows shown) and to
// the detail page's loss chart drawn (data-drawn), and the raw API calls
// behind them. It prints Markdown table rows; bench/console/run.sh writes
// bench/results/console.md around them.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
	"sigs.k8s.io/yaml"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/meta/sqlite"
)

var (
	bin    = flag.String("bin", "bench/.bin/atelier", "atelier binary")
	work   = flag.String("work", "", "scratch dir")
	jobs   = flag.Int("jobs", 10000, "jobs of the large store")
	points = flag.Int("points", 100000, "metric points of the large job")
	runs   = flag.Int("runs", 5, "timed navigations per page")
)

type server struct {
	cmd      *exec.Cmd
	dir      string
	endpoint string
	ak, sk   string
	big      string // id of the job with many points
}

func freePort() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func start(dir string) *server {
	cfg := filepath.Join(dir, "server.yaml")
	if err := os.WriteFile(cfg, []byte("sandbox: none\n"), 0o600); err != nil {
		log.Fatal(err)
	}
	listen := freePort()
	cmd := exec.Command(*bin, "server", "--data-dir", dir, "--config", cfg, "--listen", listen, "--s3-listen", freePort(), "--notebook-listen", freePort())
	lf, _ := os.Create(filepath.Join(dir, "server.log"))
	cmd.Stdout, cmd.Stderr = lf, lf
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}
	s := &server{cmd: cmd, dir: dir, endpoint: "http://" + listen}
	for i := 0; ; i++ {
		if res, err := http.Get(s.endpoint + "/healthz"); err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				break
			}
		}
		if i > 600 {
			log.Fatalf("server in %s did not start", dir)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var a struct {
		AccessKey string `json:"access_key"`
		SecretKey string `json:"secret_key"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "admin.yaml"))
	if err != nil || yaml.Unmarshal(b, &a) != nil {
		log.Fatalf("admin.yaml: %v", err)
	}
	s.ak, s.sk = a.AccessKey, a.SecretKey
	return s
}

func (s *server) stop() {
	_ = s.cmd.Process.Signal(os.Interrupt)
	_ = s.cmd.Wait()
}

// seed stores n finished jobs of the admin and, on the newest, p user
// metric samples (loss and accuracy) and p/10 system samples, straight
// into the SQLite store of a stopped server: the API would queue and run
// every job, and the runner reports one sample per line of a metrics file,
// which takes as long as the training it stands for. The records are what
// job.Create and the runner protocol store (the api.Job as spec, a
// Completed api.JobStatus as status).
func seed(dir string, n, p int) string {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "meta.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	admin, err := st.GetUserByName(ctx, "admin")
	if err != nil {
		log.Fatal(err)
	}
	t0 := time.Now().Add(-time.Duration(n) * time.Minute)
	var last string
	for i := range n {
		id := fmt.Sprintf("bench-%06d", i)
		name := fmt.Sprintf("train-%06d", i)
		created := t0.Add(time.Duration(i) * time.Minute)
		dur := int64((i*7919)%36000) * 1000
		j := api.Job{Kind: "job", Metadata: api.JobMetadata{ID: id, Name: name, CreateTime: created.UnixMilli(), UserName: "admin", WorkspaceID: "0"},
			Algorithm: api.JobAlgorithm{CodeDir: "obs://bench/code/", BootFile: "train.py", Engine: api.JobEngine{EngineName: "python3"},
				Parameters: []api.JobParameter{{Name: "lr", Value: fmt.Sprint(0.001 * float64(1+i%10))}, {Name: "epochs", Value: fmt.Sprint(10 + i%5)}}},
			Spec: api.JobSpec{Resource: api.JobResource{FlavorID: "cpu.1"}}}
		stt := api.JobStatus{Phase: api.PhaseCompleted, SecondaryPhase: api.SecondaryCompleted, Duration: dur,
			StartTime: created.Add(time.Second).UnixMilli(), EndTime: created.Add(time.Second + time.Duration(dur)*time.Millisecond).UnixMilli(),
			Tasks: []string{"worker-0"}, TaskStatuses: []api.TaskStatus{{Task: "worker-0", Reason: api.FailureCompleted}},
			RunningRecords: []api.RunningRecord{{StartAt: created.Unix() + 1, EndAt: created.Unix() + 1 + dur/1000, StartType: "init_or_rescheduled", EndReason: "completed"}}, Attempt: 1}
		spec, _ := json.Marshal(j)
		status, _ := json.Marshal(stt)
		r := &meta.JobRecord{ID: id, Name: name, OwnerID: admin.ID, Phase: api.PhaseCompleted, Priority: 1, CreateTime: created, UpdateTime: created,
			Spec: spec, Status: status, Runtime: []byte("{}"), Duration: dur}
		if err := st.CreateJob(ctx, r); err != nil {
			log.Fatal(err)
		}
		last = id
	}
	batch := make([]meta.JobMetric, 0, 5000)
	flush := func() {
		if err := st.AppendJobMetrics(ctx, last, batch); err != nil {
			log.Fatal(err)
		}
		batch = batch[:0]
	}
	for i := range p {
		step := int64(i)
		at := t0.Add(time.Duration(i) * 100 * time.Millisecond)
		batch = append(batch, meta.JobMetric{Attempt: 1, Seq: int64(i + 1), Time: at, Kind: "user", Step: &step,
			Values: map[string]float64{"loss": 2/(1+float64(i)/1000) + 0.05*float64((i*7919)%100)/100, "accuracy": 1 - 1/(1+float64(i)/2000)}})
		if i%10 == 0 {
			batch = append(batch, meta.JobMetric{Attempt: 1, Seq: int64(i/10 + 1), Time: at, Kind: "system",
				Values: map[string]float64{"cpu_percent": float64(50 + i%50), "memory_bytes": float64(1<<30 + (i%1000)<<20)}})
		}
		if len(batch) >= 5000 {
			flush()
		}
	}
	if len(batch) > 0 {
		flush()
	}
	return last
}

func setup(name string, n, p int) *server {
	dir := filepath.Join(*work, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		log.Fatal(err)
	}
	s := start(dir) // bootstraps the admin and the schema
	s.stop()
	t := time.Now()
	big := seed(dir, n, p)
	log.Printf("%s: seeded %d jobs and %d points in %s", name, n, p, time.Since(t).Round(time.Millisecond))
	s = start(dir)
	s.big = big
	return s
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// apiTime is the median time of a GET with a token, and the body size.
func (s *server) apiTime(path string) (time.Duration, int) {
	body, _ := json.Marshal(map[string]string{"access_key": s.ak, "secret_key": s.sk})
	res, err := http.Post(s.endpoint+"/api/v1/auth/tokens", "application/json", bytes.NewReader(body))
	if err != nil {
		log.Fatal(err)
	}
	tok := res.Header.Get("X-Subject-Token")
	var tb struct {
		Token string `json:"token"`
	}
	_ = json.NewDecoder(res.Body).Decode(&tb)
	res.Body.Close()
	if tok == "" {
		tok = tb.Token
	}
	var ds []time.Duration
	size := 0
	for range *runs {
		req, _ := http.NewRequest("GET", s.endpoint+path, nil)
		req.Header.Set("X-Auth-Token", tok)
		t := time.Now()
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		ds = append(ds, time.Since(t))
		if res.StatusCode != 200 {
			log.Fatalf("GET %s: %d %s", path, res.StatusCode, b)
		}
		size = len(b)
	}
	return median(ds), size
}

// pageTimes signs a fresh browser context in and times navigations to url
// until ready matches.
func (s *server) pageTimes(bctx context.Context, url, ready string) []time.Duration {
	ctx, cancel := chromedp.NewContext(bctx, chromedp.WithNewBrowserContext())
	defer cancel()
	cmd := exec.Command(*bin, "console")
	cmd.Env = append(os.Environ(), "ATELIER_CONFIG="+filepath.Join(s.dir, "admin.yaml"))
	out, err := cmd.Output()
	if err != nil {
		log.Fatalf("atelier console: %v", err)
	}
	tctx, tcancel := context.WithTimeout(ctx, time.Minute)
	defer tcancel()
	if err := chromedp.Do(tctx, chromedp.Navigate(strings.TrimSpace(string(out))),
		chromedp.WaitVisible(chromedp.CSS(`main[data-page="overview"][data-state="ready"]`))); err != nil {
		log.Fatalf("sign in: %v", err)
	}
	var ds []time.Duration
	for i := 0; i <= *runs; i++ { // the first is a warm-up (module cache)
		if err := chromedp.Do(tctx, chromedp.Navigate("about:blank")); err != nil {
			log.Fatal(err)
		}
		t := time.Now()
		if err := chromedp.Do(tctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(ready))); err != nil {
			log.Fatalf("%s: %v", url, err)
		}
		if i > 0 {
			ds = append(ds, time.Since(t))
		}
	}
	return ds
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d.Microseconds())/1000) }

func main() {
	flag.Parse()
	log.SetFlags(0)
	if *work == "" {
		log.Fatal("-work is required")
	}
	small := setup("small", 10, 100)
	defer small.stop()
	large := setup("large", *jobs, *points)
	defer large.stop()

	path, err := exec.LookPath("chromium")
	if err != nil {
		log.Fatal("no chromium on PATH")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.WindowSize(1280, 800),
		chromedp.Flag("disable-dev-shm-usage", true))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, c1 := chromedp.NewExecAllocator(context.Background(), opts...)
	defer c1()
	bctx, c2 := chromedp.NewContext(actx)
	defer c2()
	if err := chromedp.Do(bctx); err != nil {
		log.Fatal(err)
	}

	listReady := `main[data-page="jobs"][data-state="ready"] table.data tbody tr td.name a`
	chartReady := `#metric-loss[data-drawn]`
	type row struct {
		what       string
		small, big time.Duration
	}
	var rows []row
	list := func(s *server) string { return "/console/jobs" }
	detail := func(s *server) string { return "/console/jobs/" + s.big }
	sortDur := func(s *server) string {
		return "/console/jobs?sort=-duration&offset=" + fmt.Sprint(max(0, countOf(s)-50))
	}
	pageFn := func(what string, url func(*server) string, ready string) {
		sm := median(small.pageTimes(bctx, small.endpoint+url(small), ready))
		lg := median(large.pageTimes(bctx, large.endpoint+url(large), ready))
		rows = append(rows, row{what, sm, lg})
	}
	pageFn("list page, navigation → `data-state=ready` with rows", list, listReady)
	pageFn("list page sorted by `-duration`, last page", sortDur, listReady)
	pageFn("detail page, navigation → loss chart drawn (`data-drawn`)", detail, chartReady)

	type apirow struct {
		what                 string
		small, big           time.Duration
		smallSize, largeSize int
	}
	var apis []apirow
	api := func(what, path string) {
		fill := func(s *server) string {
			return strings.NewReplacer("BIG", s.big, "LAST", fmt.Sprint(max(0, countOf(s)-50))).Replace(path)
		}
		ds, ss := small.apiTime(fill(small))
		dl, sl := large.apiTime(fill(large))
		apis = append(apis, apirow{what, ds, dl, ss, sl})
	}
	api("`GET /api/v1/training-jobs?limit=50`", "/api/v1/training-jobs?limit=50")
	api("`GET …?sort=-duration&limit=50&offset=LAST` (last page)", "/api/v1/training-jobs?sort=-duration&limit=50&offset=LAST")
	api("`GET …/metrics?max_points=2000` (what the page asks)", "/api/v1/training-jobs/BIG/metrics?max_points=2000")
	api("`GET …/metrics` (every point)", "/api/v1/training-jobs/BIG/metrics")

	fmt.Printf("| page (median of %d navigations, Chromium) | baseline: 10 jobs, 100 points | %d jobs, %d points | ratio |\n|---|---|---|---|\n", *runs, *jobs, *points)
	for _, r := range rows {
		fmt.Printf("| %s | %s | **%s** | %.2fx |\n", r.what, ms(r.small), ms(r.big), float64(r.big)/float64(r.small))
	}
	fmt.Printf("\n| raw API call (median of %d, Go client, token auth) | baseline | large | ratio |\n|---|---|---|---|\n", *runs)
	for _, a := range apis {
		fmt.Printf("| %s | %s (%s) | %s (%s) | %.2fx |\n", a.what, ms(a.small), kib(a.smallSize), ms(a.big), kib(a.largeSize), float64(a.big)/float64(a.small))
	}
}

func kib(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.0f KiB", float64(n)/1024)
}

func countOf(s *server) int {
	if s.big == "" {
		return 0
	}
	var n int
	fmt.Sscanf(strings.TrimPrefix(s.big, "bench-"), "%d", &n)
	return n + 1
}
