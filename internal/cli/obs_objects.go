package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth/sigv4"
	"github.com/atelier-dev/atelier/internal/config"
	"github.com/atelier-dev/atelier/internal/errs"
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
	var objectLock bool
	cmd := &cobra.Command{
		Use:   "mb obs://BUCKET",
		Short: "Make a bucket",
		Long: `Make a bucket. Names are 3-63 lowercase letters, digits, hyphens and dots,
starting and ending with a letter or digit. New buckets are private.
With --object-lock the bucket keeps every version and protects versions under a
retention or legal hold (see ` + "`atelier obs lock`" + `); its versioning is Enabled for good.`,
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
			if objectLock {
				err = c.MakeLockedBucket(cmd.Context(), b)
			} else {
				err = c.MakeBucket(cmd.Context(), b)
			}
			if err != nil {
				return err
			}
			if objectLock {
				o.a.done("created bucket obs://%s with object lock", b)
			} else {
				o.a.done("created bucket obs://%s", b)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&objectLock, "object-lock", false, "enable object lock (and versioning, for good)")
	return cmd
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
	var post bool
	var maxSize, contentType string
	cmd := &cobra.Command{
		Use:   "presign obs://BUCKET/KEY [--expires 1h] | --post obs://BUCKET/PREFIX/ [--max-size 100MiB]",
		Short: "Print a URL that downloads an object, or a form that uploads one, without credentials",
		Long: `Print a presigned URL that anyone can use to GET the object until it
expires (at most 7 days, 168h).

With --post, print instead what a browser form needs to upload one file
(a POST policy, signed with your key on this machine): the URL to POST to
and the form fields, as JSON. Send the fields, then the file as the field
named "file", as multipart/form-data. A location ending in "/" (or a bucket
alone) lets the uploader choose any key under that prefix (the key field is
PREFIX${filename}, the browser's file name); otherwise the key is exactly the
one given. --max-size bounds the file (content-length-range); --content-type
sets the Content-Type field and lets the uploader change it to anything that
starts with it. The upload can do no more than you could with PUT.`,
		Args: exactArgs("obs://BUCKET/KEY"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if expires < time.Second || expires > obsclient.MaxPresign {
				return usagef("--expires must be between 1s and 168h (7 days), got %s", expires)
			}
			if post {
				return o.presignPost(args[0], expires, maxSize, contentType)
			}
			if maxSize != "" || contentType != "" {
				return usagef("--max-size and --content-type go with --post")
			}
			l, err := obsParseRemote(args[0])
			if err != nil {
				return err
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
	fl := cmd.Flags()
	fl.DurationVar(&expires, "expires", time.Hour, "how long the URL or the form works (at most 168h)")
	fl.BoolVar(&post, "post", false, "print a browser-form upload (URL and form fields, JSON) instead of a download URL")
	fl.StringVar(&maxSize, "max-size", "", "with --post: the largest file the form uploads, e.g. 100MiB")
	fl.StringVar(&contentType, "content-type", "", "with --post: the Content-Type field; the uploader may change what follows it")
	return cmd
}

// obsPostForm is what `obs presign --post` prints.
type obsPostForm struct {
	URL     string            `json:"url"`
	Fields  map[string]string `json:"fields"`
	Expires string            `json:"expires"`
}

// presignPost prints a browser-form upload to loc signed with the
// configured key (client side, as presigned URLs are).
func (o *obsCmds) presignPost(loc string, expires time.Duration, maxSize, contentType string) error {
	l, err := obsParseRemote(loc)
	if err != nil {
		return err
	}
	var max int64
	if maxSize != "" {
		if max, err = config.ParseBytes(maxSize); err != nil || max < 1 {
			return usagef("--max-size %q is not a size such as 100MiB", maxSize)
		}
	}
	cfg, err := o.a.loadConfig()
	if err != nil {
		return err
	}
	if cfg.S3Endpoint == "" || cfg.AccessKey == "" || cfg.SecretKey == "" {
		return errs.E(errs.Op("cli.presignPost"), errs.Invalid, "signing a form needs s3_endpoint, access_key and secret_key in the client config",
			errs.Hint("run `atelier configure`"))
	}
	now := time.Now()
	fields, err := sigv4.PresignPost(sigv4.Credentials{AccessKey: cfg.AccessKey, SecretKey: cfg.SecretKey}, obsclient.Region, now, expires,
		sigv4.PostOptions{Bucket: l.Bucket, Key: l.Key, KeyPrefix: l.Key == "" || strings.HasSuffix(l.Key, "/"), MaxSize: max,
			ContentTypePrefix: contentType})
	if err != nil {
		return err
	}
	out := obsPostForm{URL: strings.TrimSuffix(cfg.S3Endpoint, "/") + "/" + l.Bucket, Fields: fields,
		Expires: now.Add(expires).UTC().Format(time.RFC3339)}
	enc := json.NewEncoder(o.a.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}
