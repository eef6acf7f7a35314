package cli

import (
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is the release version. It is the package's only variable, never
// written at run time: release builds set it with
//
//	go build -ldflags "-X github.com/atelier-dev/atelier/internal/cli.version=v1.2.3" ./cmd/atelier
//
// When it is empty the module version from the build info is used, or "dev".
var version string

// versionInfo is what `atelier version` shows.
type versionInfo struct {
	Version    string `json:"version"`
	Commit     string `json:"commit"`
	CommitTime string `json:"commit_time,omitempty"`
	Modified   bool   `json:"modified,omitempty"`
	GoVersion  string `json:"go_version"`
	Platform   string `json:"platform"`
}

// buildVersion collects the version and the build info of the binary.
func buildVersion() versionInfo {
	v := versionInfo{Version: version, Commit: "unknown", GoVersion: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if ok {
		if v.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Commit = s.Value
			case "vcs.time":
				v.CommitTime = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	if v.Version == "" {
		v.Version = "dev"
	}
	return v
}

func newVersionCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and Go version of this binary",
		Args:  exactArgs(),
		RunE: func(*cobra.Command, []string) error {
			v := buildVersion()
			return a.show(v, func(w io.Writer) {
				commit := v.Commit
				if v.Modified {
					commit += " (modified)"
				}
				field(w, "Version", v.Version)
				field(w, "Commit", commit)
				if v.CommitTime != "" {
					field(w, "Commit time", v.CommitTime)
				}
				field(w, "Go", v.GoVersion)
				field(w, "Platform", v.Platform)
			})
		},
	}
}
