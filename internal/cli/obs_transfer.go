package cli

import (
	"github.com/spf13/cobra"

	"github.com/atelier-dev/atelier/internal/obsclient"
)

func (o *obsCmds) cp() *cobra.Command {
	var f obsTransferFlags
	var versionID string
	cmd := &cobra.Command{
		Use:   "cp SRC DST",
		Short: "Copy files and objects to, from and within OBS",
		Long: `Copy a file or object, or with -r the contents of a directory or prefix,
between the local file system and OBS or within OBS (a server-side copy).

  atelier obs cp model.pt obs://b/models/          # -> obs://b/models/model.pt
  atelier obs cp -r data obs://b/ds/               # data/cat/1.jpg -> obs://b/ds/cat/1.jpg
  atelier obs cp -r obs://b/ds ./data              # obs://b/ds/cat/1.jpg -> data/cat/1.jpg
  atelier obs cp -r obs://b/ds/ obs://b/backup/    # copied on the server

A single file goes to DST, or into DST under its own name when DST ends in
"/" or is an existing directory (or prefix). Existing objects are replaced;
existing local files only with -f. Run the same command again to resume an
interrupted upload of large files. --version-id ID copies that version of an
object of a versioned bucket to a local file.`,
		Args: exactArgs("SRC", "DST"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if versionID != "" {
				if f.recursive {
					return usagef("--version-id copies one version of one object; it does not go with -r")
				}
				return o.copyVersion(cmd, args, versionID, f.force)
			}
			return o.copy(cmd, args, f, false)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&versionID, "version-id", "", "copy this version of the object (SRC in OBS, DST a local path)")
	cmd.Flags().BoolVarP(&f.recursive, "recursive", "r", false, "copy the contents of a directory or prefix")
	cmd.Flags().BoolVarP(&f.force, "force", "f", false, "replace existing local files")
	return cmd
}

func (o *obsCmds) mv() *cobra.Command {
	var f obsTransferFlags
	cmd := &cobra.Command{
		Use:   "mv SRC DST",
		Short: "Move files and objects to, from and within OBS",
		Long: `Copy like ` + "`atelier obs cp`" + `, deleting each source file or object once it is
copied. Sources whose copy failed are kept; emptied local directories are
left in place.`,
		Args: exactArgs("SRC", "DST"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.copy(cmd, args, f, true)
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVarP(&f.recursive, "recursive", "r", false, "move the contents of a directory or prefix")
	cmd.Flags().BoolVarP(&f.force, "force", "f", false, "replace existing local files")
	return cmd
}

// copy runs cp (or mv, with move).
func (o *obsCmds) copy(cmd *cobra.Command, args []string, f obsTransferFlags, move bool) error {
	src, dst, err := obsParsePair(args)
	if err != nil {
		return err
	}
	opt, err := f.options()
	if err != nil {
		return err
	}
	c, err := o.client(opt, f.quiet)
	if err != nil {
		return err
	}
	_, err = c.Copy(cmd.Context(), src, dst, obsclient.CopyOptions{Recursive: f.recursive, All: f.all, Force: f.force, Move: move})
	return err
}

func (o *obsCmds) sync() *cobra.Command {
	var f obsTransferFlags
	cmd := &cobra.Command{
		Use:   "sync SRC DST",
		Short: "Copy only what is missing or different, between directories and prefixes",
		Long: `Make the directory or prefix DST hold what the directory or prefix SRC holds:
files missing at DST or different there are copied (local files are replaced);
with --delete, files at DST that SRC lacks are deleted (except .git/ and
__pycache__/ unless --all).

Files of different sizes differ. For equal sizes the content is compared by
MD5 with a single-part object's ETag, or with a multipart ETag recomputed from
the local file at the likely part sizes; when neither can decide, the files
are equal if DST is at least as new as SRC (downloads keep the object's time).`,
		Args: exactArgs("SRC", "DST"),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, dst, err := obsParsePair(args)
			if err != nil {
				return err
			}
			opt, err := f.options()
			if err != nil {
				return err
			}
			c, err := o.client(opt, f.quiet)
			if err != nil {
				return err
			}
			_, err = c.Sync(cmd.Context(), src, dst, obsclient.SyncOptions{Delete: f.delete, All: f.all})
			return err
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&f.delete, "delete", false, "delete files at DST that SRC does not have")
	return cmd
}
