package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/obsclient"
	"github.com/atelier-dev/atelier/internal/obsurl"
	"github.com/atelier-dev/atelier/internal/text"
)

// obsVersion is a version of an object as ls --versions shows it.
type obsVersion struct {
	obsObject
	VersionID    string `json:"version_id,omitempty"`
	IsLatest     bool   `json:"is_latest,omitempty"`
	DeleteMarker bool   `json:"delete_marker,omitempty"`
}

// versioning builds `atelier obs versioning enable|suspend|get obs://BUCKET`.
func (o *obsCmds) versioning() *cobra.Command {
	set := func(use, short string, enabled bool) *cobra.Command {
		return &cobra.Command{
			Use:   use + " obs://BUCKET",
			Short: short,
			Args:  exactArgs("obs://BUCKET"),
			RunE: func(cmd *cobra.Command, args []string) error {
				l, err := obsParseRemote(args[0])
				if err != nil {
					return err
				}
				c, err := o.plainClient()
				if err != nil {
					return err
				}
				if err := c.SetVersioning(cmd.Context(), l, enabled); err != nil {
					return err
				}
				o.a.done("versioning of obs://%s: %s", l.Bucket, map[bool]string{true: "Enabled", false: "Suspended"}[enabled])
				return nil
			},
		}
	}
	get := &cobra.Command{
		Use:   "get obs://BUCKET",
		Short: "Show whether a bucket keeps versions: Enabled, Suspended or never enabled",
		Args:  exactArgs("obs://BUCKET"),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := obsParseRemote(args[0])
			if err != nil {
				return err
			}
			c, err := o.plainClient()
			if err != nil {
				return err
			}
			st, err := c.Versioning(cmd.Context(), l)
			if err != nil {
				return err
			}
			shown := st
			if shown == "" {
				shown = "Unversioned"
			}
			return o.a.show(map[string]string{"bucket": l.Bucket, "versioning": st}, func(w io.Writer) {
				fmt.Fprintln(w, shown)
			})
		},
	}
	cmd := group("versioning", "Enable, suspend or show the versioning of a bucket",
		set("enable", "Keep every version of every object of a bucket (a delete adds a delete marker)", true),
		set("suspend", "Stop making new versions (writes replace the null version; old versions stay)", false),
		get)
	cmd.Long = `A versioned bucket keeps every version of its objects: an overwrite makes a new
version, a delete adds a delete marker, and old versions stay readable by their
version id (ls --versions, cp --version-id) until deleted by it (rm --version-id).
Once enabled, versioning can be suspended but not turned off.`
	return cmd
}

// listVersions is ls --versions.
func (o *obsCmds) listVersions(cmd *cobra.Command, c *obsclient.Client, l obsclient.Location, recursive, long bool) error {
	vs, err := c.ListVersions(cmd.Context(), l, recursive)
	if err != nil {
		return err
	}
	items := make([]obsVersion, len(vs))
	for i, v := range vs {
		items[i] = obsVersion{obsObject: obsObjectView(l.Bucket, v.Object), VersionID: v.VersionID, IsLatest: v.IsLatest, DeleteMarker: v.DeleteMarker}
	}
	list := api.List[obsVersion]{Total: len(items), Count: len(items), Items: items}
	return o.a.show(list, func(w io.Writer) {
		if long {
			row(w, "VERSION", "LATEST", "SIZE", "LAST MODIFIED", "URL")
		} else {
			row(w, "VERSION", "LATEST", "URL")
		}
		for _, it := range items {
			if it.Dir {
				if long {
					row(w, "-", "-", "DIR", "-", it.URL)
				} else {
					row(w, "-", "-", it.URL)
				}
				continue
			}
			latest := map[bool]string{true: "*", false: ""}[it.IsLatest]
			size := text.Bytes(it.Size)
			if it.DeleteMarker {
				size = "(delete marker)"
			}
			if long {
				row(w, it.VersionID, latest, size, timeMs(it.LastModified), it.URL)
			} else if it.DeleteMarker {
				row(w, it.VersionID, latest, it.URL+" (delete marker)")
			} else {
				row(w, it.VersionID, latest, it.URL)
			}
		}
	})
}

// copyVersion is cp --version-id: one version of an object to a local file.
func (o *obsCmds) copyVersion(cmd *cobra.Command, args []string, versionID string, force bool) error {
	src, dst, err := obsParsePair(args)
	if err != nil {
		return err
	}
	if !src.Remote() || dst.Remote() || src.Key == "" {
		return usagef("--version-id copies one version of an object to a local file: cp --version-id ID obs://BUCKET/KEY PATH")
	}
	path := dst.Path
	if fi, err := os.Stat(path); err == nil && fi.IsDir() || dst.DirSyntax() {
		path = filepath.Join(path, filepath.Base(src.Key))
	}
	if _, err := os.Stat(path); err == nil && !force {
		return usagef("%s exists; add -f to replace it", path)
	}
	c, err := o.plainClient()
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".atelier-version-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	n, err := c.GetVersion(cmd.Context(), src, versionID, tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	o.a.done("copied version %s of %s to %s (%s)", versionID, obsurl.Format(src.Bucket, src.Key), path, text.Bytes(n))
	return nil
}
