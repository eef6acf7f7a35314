package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/obsclient"
	"github.com/atelier-dev/atelier/internal/obsurl"
	"github.com/atelier-dev/atelier/internal/text"
)

// obsBucket is a bucket as ls -o json|yaml shows it.
type obsBucket struct {
	Name       string `json:"name"`
	URL        string `json:"url"`
	CreateTime int64  `json:"create_time"`
}

// obsObject is an object, or a prefix (Dir), as ls and stat show it.
type obsObject struct {
	URL          string `json:"url"`
	Bucket       string `json:"bucket"`
	Key          string `json:"key"`
	Dir          bool   `json:"dir,omitempty"`
	Size         int64  `json:"size"`
	ETag         string `json:"etag,omitempty"`
	LastModified int64  `json:"last_modified,omitempty"`
	ContentType  string `json:"content_type,omitempty"`
}

// obsObjectView is how ls and stat show o, an object of bucket.
func obsObjectView(bucket string, o obsclient.Object) obsObject {
	v := obsObject{URL: obsurl.Format(bucket, o.Key), Bucket: bucket, Key: o.Key, Dir: o.Prefix,
		Size: o.Size, ETag: o.ETag, ContentType: o.ContentType}
	if !o.LastModified.IsZero() {
		v.LastModified = o.LastModified.UnixMilli()
	}
	return v
}

// plainClient connects for a command that moves no files.
func (o *obsCmds) plainClient() (*obsclient.Client, error) {
	return o.client(obsclient.Options{}, true)
}

func (o *obsCmds) mb() *cobra.Command {
	return &cobra.Command{
		Use:   "mb obs://BUCKET",
		Short: "Make a bucket",
		Long: `Make a bucket. Names are 3-63 lowercase letters, digits, hyphens and dots,
starting and ending with a letter or digit. New buckets are private.`,
		Args: exactArgs("obs://BUCKET"),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := obsParseBucket(args[0])
			if err != nil {
				return err
			}
			c, err := o.plainClient()
			if err != nil {
				return err
			}
			if err := c.MakeBucket(cmd.Context(), b); err != nil {
				return err
			}
			o.a.done("created bucket obs://%s", b)
			return nil
		},
	}
}

func (o *obsCmds) rb() *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "rb obs://BUCKET [--force]",
		Short: "Remove a bucket",
		Long: `Remove an empty bucket; with --force, first delete every object in it and
abort its incomplete multipart uploads.`,
		Args: exactArgs("obs://BUCKET"),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := obsParseBucket(args[0])
			if err != nil {
				return err
			}
			c, err := o.plainClient()
			if err != nil {
				return err
			}
			n, err := c.RemoveBucket(cmd.Context(), b, force)
			if err != nil {
				return err
			}
			if n > 0 {
				o.a.done("deleted bucket obs://%s and %s", b, obsPlural(n, "object", "objects"))
			} else {
				o.a.done("deleted bucket obs://%s", b)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "delete the bucket's objects first")
	return cmd
}

func (o *obsCmds) ls() *cobra.Command {
	var recursive, long, versions bool
	cmd := &cobra.Command{
		Use:   "ls [obs://BUCKET[/PREFIX]] [-r] [-l]",
		Short: "List buckets, or the objects under a prefix",
		Long: `Without an argument, list your buckets. With one, list the objects and
"directories" under it, one level deep (every object with -r). obs://b/ds and
obs://b/ds/ both list the contents of ds/. -l adds sizes and times. With -o json
or -o yaml the list object {"total", "count", "items"} is printed. --versions
lists every version and delete marker, each key's newest first, with its
version id ("*" marks the latest).`,
		Args: obsOptionalArg("obs://BUCKET[/PREFIX]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var l obsclient.Location
			if len(args) == 1 {
				var err error
				if l, err = obsParseRemote(args[0]); err != nil {
					return err
				}
			}
			c, err := o.plainClient()
			if err != nil {
				return err
			}
			if !l.Remote() {
				if versions {
					return usagef("--versions lists the versions under obs://BUCKET[/PREFIX]; name one")
				}
				return o.listBuckets(cmd, c, long)
			}
			if versions {
				return o.listVersions(cmd, c, l, recursive, long)
			}
			objs, err := c.List(cmd.Context(), l, recursive)
			if err != nil {
				return err
			}
			items := make([]obsObject, len(objs))
			var total int64
			for i, ob := range objs {
				items[i] = obsObjectView(l.Bucket, ob)
				total += ob.Size
			}
			list := api.List[obsObject]{Total: len(items), Count: len(items), Items: items}
			return o.a.show(list, func(w io.Writer) {
				if !long {
					for _, it := range items {
						fmt.Fprintln(w, it.URL)
					}
					return
				}
				row(w, "SIZE", "LAST MODIFIED", "URL")
				for _, it := range items {
					if it.Dir {
						row(w, "DIR", "-", it.URL)
						continue
					}
					row(w, text.Bytes(it.Size), timeMs(it.LastModified), it.URL)
				}
				fmt.Fprintf(w, "%s, %s\n", obsPlural(len(items), "entry", "entries"), text.Bytes(total))
			})
		},
	}
	cmd.Flags().BoolVarP(&recursive, "recursive", "r", false, "list every object under the prefix")
	cmd.Flags().BoolVarP(&long, "long", "l", false, "show sizes and times")
	cmd.Flags().BoolVar(&versions, "versions", false, "list every version and delete marker (a versioned bucket)")
	return cmd
}

// listBuckets is ls without an argument.
func (o *obsCmds) listBuckets(cmd *cobra.Command, c *obsclient.Client, long bool) error {
	bs, err := c.ListBuckets(cmd.Context())
	if err != nil {
		return err
	}
	items := make([]obsBucket, len(bs))
	for i, b := range bs {
		items[i] = obsBucket{Name: b.Name, URL: "obs://" + b.Name, CreateTime: b.Created.UnixMilli()}
	}
	list := api.List[obsBucket]{Total: len(items), Count: len(items), Items: items}
	return o.a.show(list, func(w io.Writer) {
		if !long {
			for _, it := range items {
				fmt.Fprintln(w, it.URL)
			}
			return
		}
		row(w, "CREATED", "BUCKET")
		for _, it := range items {
			row(w, timeMs(it.CreateTime), it.URL)
		}
	})
}

func (o *obsCmds) rm() *cobra.Command {
	var recursive bool
	var versionID string
	cmd := &cobra.Command{
		Use:   "rm obs://BUCKET/KEY [-r]",
		Short: "Delete an object, or with -r everything under a prefix",
		Long: `Delete an object. With -r, delete every object under the prefix (obs://b/ds
and obs://b/ds/ both mean everything under ds/, plus the object ds itself if
there is one); obs://b with -r empties the bucket. In a versioned bucket a
delete adds a delete marker and keeps the versions; --version-id deletes one
version (or delete marker) for good.`,
		Args: exactArgs("obs://BUCKET/KEY"),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := obsParseRemote(args[0])
			if err != nil {
				return err
			}
			if versionID != "" && recursive {
				return usagef("--version-id deletes one version of one object; it does not go with -r")
			}
			c, err := o.plainClient()
			if err != nil {
				return err
			}
			if versionID != "" {
				if err := c.RemoveVersion(cmd.Context(), l, versionID); err != nil {
					return err
				}
				o.a.done("deleted version %s of %s", versionID, l)
				return nil
			}
			n, err := c.Remove(cmd.Context(), l, recursive)
			if err != nil {
				return err
			}
			if recursive {
				o.a.done("deleted %s under %s", obsPlural(n, "object", "objects"), l.AsDir())
			} else {
				o.a.done("deleted %s", l)
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&recursive, "recursive", "r", false, "delete everything under the prefix")
	cmd.Flags().StringVar(&versionID, "version-id", "", "delete this version of the object for good")
	return cmd
}

func (o *obsCmds) stat() *cobra.Command {
	return &cobra.Command{
		Use:   "stat obs://BUCKET/KEY",
		Short: "Show an object's size, ETag, time and content type",
		Args:  exactArgs("obs://BUCKET/KEY"),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := obsParseRemote(args[0])
			if err != nil {
				return err
			}
			c, err := o.plainClient()
			if err != nil {
				return err
			}
			ob, err := c.Stat(cmd.Context(), l)
			if err != nil {
				return err
			}
			v := obsObjectView(l.Bucket, ob)
			return o.a.show(v, func(w io.Writer) {
				field(w, "URL", v.URL)
				field(w, "Size", fmt.Sprintf("%d (%s)", v.Size, text.Bytes(v.Size)))
				field(w, "ETag", orDash(v.ETag))
				if n, ok := obsETagParts(v.ETag); ok {
					field(w, "Parts", n)
				}
				field(w, "Last modified", timeMs(v.LastModified))
				field(w, "Content type", orDash(v.ContentType))
			})
		},
	}
}

// obsETagParts is N of a multipart ETag "<md5>-N".
func obsETagParts(etag string) (string, bool) {
	sum, n, ok := strings.Cut(etag, "-")
	return n, ok && len(sum) == 32 && n != ""
}

func (o *obsCmds) cat() *cobra.Command {
	return &cobra.Command{
		Use:   "cat obs://BUCKET/KEY",
		Short: "Write an object's content to standard output",
		Args:  exactArgs("obs://BUCKET/KEY"),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := obsParseRemote(args[0])
			if err != nil {
				return err
			}
			c, err := o.plainClient()
			if err != nil {
				return err
			}
			_, err = c.Cat(cmd.Context(), l, o.a.stdout)
			return err
		},
	}
}

func (o *obsCmds) presign() *cobra.Command {
	var expires time.Duration
	cmd := &cobra.Command{
		Use:   "presign obs://BUCKET/KEY [--expires 1h]",
		Short: "Print a URL that downloads an object without credentials",
		Long: `Print a presigned URL that anyone can use to GET the object until it
expires (at most 7 days, 168h).`,
		Args: exactArgs("obs://BUCKET/KEY"),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := obsParseRemote(args[0])
			if err != nil {
				return err
			}
			if expires < time.Second || expires > obsclient.MaxPresign {
				return usagef("--expires must be between 1s and 168h (7 days), got %s", expires)
			}
			c, err := o.plainClient()
			if err != nil {
				return err
			}
			u, err := c.Presign(cmd.Context(), l, expires)
			if err != nil {
				return err
			}
			fmt.Fprintln(o.a.stdout, u)
			return nil
		},
	}
	cmd.Flags().DurationVar(&expires, "expires", time.Hour, "how long the URL works (at most 168h)")
	return cmd
}
