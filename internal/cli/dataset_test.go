package cli

import (
	"strings"
	"testing"

	"github.com/atelier-dev/atelier/internal/api"
)

// TestVersionDetail: what `dataset get DATASET --version V` prints for a
// version whose pins lifecycle rules keep, one over another user's bucket
// that degraded, and one that failed.
func TestVersionDetail(t *testing.T) {
	published := api.DatasetVersion{VersionID: "0198-v1", VersionName: "v1", Status: api.DatasetVersionPublished,
		ManifestPath: "obs://atelier-system/datasets/0198-d/0198-v1.manifest", TotalSampleCount: 120, AnnotatedSampleCount: 118,
		ObjectCount: 120, PinnedObjects: 120, HeldObjects: 120, Bytes: 5 << 20, Classes: []string{"daisy", "rose"},
		PerClass: map[string]int{"daisy": 60, "rose": 58}, PerUsage: map[string]int{"train": 96, "eval": 24}}
	others := published
	others.VersionID, others.VersionName, others.Status, others.HeldObjects = "0198-v2", "v2", api.DatasetVersionDegraded, 0
	others.Changes = []api.DatasetObjectChange{{Change: "deleted", Object: "obs://alice-bkt/flowers/rose/0.png", VersionID: "0192d3a4"}}
	partly := published
	partly.VersionID, partly.VersionName, partly.HeldObjects = "0198-v3", "v3", 100
	failed := api.DatasetVersion{VersionID: "0198-v4", VersionName: "v4", Status: api.DatasetVersionFailed,
		FailureMessage: "validation found 1 error (and 0 warnings): the first is ...", Errors: 1}
	var b strings.Builder
	for _, v := range []api.DatasetVersion{published, others, partly, failed} {
		versionDetail(&b, &v)
		b.WriteString("\n")
	}
	golden(t, "dataset_version_detail", b.String())
}
