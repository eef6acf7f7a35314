package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/obsclient"
	"github.com/atelier-dev/atelier/internal/obsclient/obsmem"
)

// benchInputs is the benchmark's dataset: 2,000 files, 50 MB.
func benchInputs(b *testing.B) (*obsmem.Store, []Channel) {
	store := obsmem.New()
	store.MakeBucket(context.Background(), "bkt")
	data := make([]byte, 25_000)
	for i := range 2000 {
		data[0] = byte(i)
		store.PutObject("bkt", fmt.Sprintf("ds/c%d/%04d.jpg", i%10, i), append([]byte(nil), data...), time.Now())
	}
	loc, _ := obsclient.ParseLocation("obs://bkt/ds/")
	return store, []Channel{{Name: "data_url", Remote: loc}}
}

// BenchmarkStageInputs stages 2,000 files / 50 MB from an in-memory OBS:
// cold (every object downloaded into the cache) and warm (all cache hits,
// only links), over S3 and through the runner protocol's listing and tar
// streams (an in-memory server: this measures the runner's side).
func BenchmarkStageInputs(b *testing.B) {
	for _, bulk := range []bool{false, true} {
		for _, warm := range []bool{false, true} {
			b.Run(fmt.Sprintf("bulk=%v/warm=%v", bulk, warm), func(b *testing.B) {
				store, chans := benchInputs(b)
				work := b.TempDir()
				st := &stager{s3: store, client: obsclient.New(store, obsclient.Options{Jobs: StageJobs}),
					cacheDir: ObjectCacheDir(work), warn: func(string) {}}
				if bulk {
					st.inputs = newMemInputs(store, chans...)
				}
				if warm {
					chans[0].Dir = filepath.Join(work, "prime")
					if _, err := st.stageInputs(context.Background(), chans); err != nil {
						b.Fatal(err)
					}
				}
				b.ResetTimer()
				var cpu time.Duration
				for i := range b.N {
					b.StopTimer()
					if !warm {
						os.RemoveAll(st.cacheDir)
					}
					chans[0].Dir = filepath.Join(work, fmt.Sprint(i))
					c0 := cpuTime()
					b.StartTimer()
					if _, err := st.stageInputs(context.Background(), chans); err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					cpu += cpuTime() - c0
					b.StartTimer()
				}
				// CPU time does not depend on what else runs on the machine.
				b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
			})
		}
	}
}

// BenchmarkPlace links 2,000 cached files into a fresh input dir, one at
// a time and placeJobs at a time.
func BenchmarkPlace(b *testing.B) {
	store, chans := benchInputs(b)
	work := b.TempDir()
	st := &stager{s3: store, client: obsclient.New(store, obsclient.Options{Jobs: StageJobs}),
		cacheDir: ObjectCacheDir(work), warn: func(string) {}}
	l, err := st.list(context.Background(), chans[0].Remote)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := st.fetch(context.Background(), l.Files); err != nil {
		b.Fatal(err)
	}
	for _, jobs := range []int{1, placeJobs} {
		b.Run(fmt.Sprintf("jobs=%d", jobs), func(b *testing.B) {
			for i := range b.N {
				dir := filepath.Join(work, fmt.Sprintf("j%d-%d", jobs, i))
				if err := st.placeN(l.Files, l.Dirs, dir, true, jobs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// cpuTime is the user and system CPU time of this process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
