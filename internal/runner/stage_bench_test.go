package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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
// only links).
func BenchmarkStageInputs(b *testing.B) {
	for _, warm := range []bool{false, true} {
		b.Run(fmt.Sprintf("warm=%v", warm), func(b *testing.B) {
			store, chans := benchInputs(b)
			work := b.TempDir()
			st := &stager{s3: store, client: obsclient.New(store, obsclient.Options{Jobs: StageJobs}),
				cacheDir: ObjectCacheDir(work), warn: func(string) {}}
			if warm {
				chans[0].Dir = filepath.Join(work, "prime")
				if _, err := st.stageInputs(context.Background(), chans); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				if !warm {
					os.RemoveAll(st.cacheDir)
				}
				chans[0].Dir = filepath.Join(work, fmt.Sprint(i))
				b.StartTimer()
				if _, err := st.stageInputs(context.Background(), chans); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
