package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/atelier-dev/atelier/internal/obsclient"
)

// obsLockView is a bucket's object lock as `obs lock get` shows it.
type obsLockView struct {
	Bucket     string `json:"bucket"`
	ObjectLock string `json:"object_lock"`
	Mode       string `json:"default_mode,omitempty"`
	Days       int    `json:"default_days,omitempty"`
	Years      int    `json:"default_years,omitempty"`
}

// obsRetentionView is a version's retention as `obs retention` shows it.
type obsRetentionView struct {
	URL       string `json:"url"`
	VersionID string `json:"version_id,omitempty"`
	Mode      string `json:"mode"`
	Until     string `json:"retain_until"`
}

// obsLegalHoldView is a version's legal hold as `obs legal-hold` shows it.
type obsLegalHoldView struct {
	URL       string `json:"url"`
	VersionID string `json:"version_id,omitempty"`
	LegalHold string `json:"legal_hold"`
}

// lockModeFlag checks a --mode value: GOVERNANCE or COMPLIANCE, in any case.
func lockModeFlag(mode string) (string, error) {
	m := strings.ToUpper(strings.TrimSpace(mode))
	if m != "GOVERNANCE" && m != "COMPLIANCE" {
		return "", usagef("--mode must be GOVERNANCE or COMPLIANCE, got %q", mode)
	}
	return m, nil
}

// lock builds `atelier obs lock get|set obs://BUCKET`.
func (o *obsCmds) lock() *cobra.Command {
	var mode string
	var days, years int
	set := &cobra.Command{
		Use:   "set obs://BUCKET",
		Short: "Enable object lock on a bucket, with or without a default retention",
		Long: `Enable object lock on a bucket whose versioning is Enabled, and set its default
retention: --mode GOVERNANCE or COMPLIANCE with --days or --years, which every new
version gets unless its write asks for a retention of its own. Without --mode
the default retention is removed (object lock stays on: it cannot be turned off).`,
		Args: exactArgs("obs://BUCKET"),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := obsParseBucket(args[0])
			if err != nil {
				return err
			}
			var cfg obsclient.LockConfig
			switch {
			case mode == "" && (days != 0 || years != 0):
				return usagef("--days and --years give the period of a default retention: add --mode GOVERNANCE or COMPLIANCE")
			case mode != "":
				if cfg.Mode, err = lockModeFlag(mode); err != nil {
					return err
				}
				if (days > 0) == (years > 0) || days < 0 || years < 0 {
					return usagef("a default retention needs one of --days and --years, a whole number from 1")
				}
				cfg.Days, cfg.Years = days, years
			}
			c, err := o.plainClient()
			if err != nil {
				return err
			}
			if err := c.SetObjectLock(cmd.Context(), obsclient.Location{Bucket: b}, cfg); err != nil {
				return err
			}
			o.a.done("object lock of obs://%s: Enabled, %s", b, defaultRetention(cfg))
			return nil
		},
	}
	set.Flags().StringVar(&mode, "mode", "", "default retention mode: GOVERNANCE or COMPLIANCE")
	set.Flags().IntVar(&days, "days", 0, "default retention period in days")
	set.Flags().IntVar(&years, "years", 0, "default retention period in years")
	get := &cobra.Command{
		Use:   "get obs://BUCKET",
		Short: "Show a bucket's object lock and default retention",
		Args:  exactArgs("obs://BUCKET"),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := obsParseBucket(args[0])
			if err != nil {
				return err
			}
			c, err := o.plainClient()
			if err != nil {
				return err
			}
			cfg, err := c.ObjectLock(cmd.Context(), obsclient.Location{Bucket: b})
			if err != nil {
				return err
			}
			v := obsLockView{Bucket: b, ObjectLock: "Enabled", Mode: cfg.Mode, Days: cfg.Days, Years: cfg.Years}
			return o.a.show(v, func(w io.Writer) {
				field(w, "Object lock", "Enabled")
				field(w, "Default retention", defaultRetention(cfg))
			})
		},
	}
	cmd := group("lock", "Enable or show the object lock of a bucket", set, get)
	cmd.Long = `Object lock keeps versions from being deleted: a version under a retention
(GOVERNANCE or COMPLIANCE, until a date) or a legal hold cannot be deleted by its
version id until the date passes or the hold is off. A delete without a version
id still adds a delete marker. Make a bucket with object lock with
` + "`atelier obs mb --object-lock`" + `, or enable it here on a bucket whose versioning is
Enabled; it cannot be turned off, nor the versioning suspended, again.
See also ` + "`atelier obs retention` and `atelier obs legal-hold`."
	return cmd
}

// defaultRetention describes a default retention.
func defaultRetention(c obsclient.LockConfig) string {
	switch {
	case c.Mode == "":
		return "no default retention"
	case c.Years != 0:
		return fmt.Sprintf("default retention %s for %d year(s)", c.Mode, c.Years)
	}
	return fmt.Sprintf("default retention %s for %d day(s)", c.Mode, c.Days)
}

// retention builds `atelier obs retention obs://BUCKET/KEY`.
func (o *obsCmds) retention() *cobra.Command {
	var versionID, mode, until string
	var clear, bypass bool
	cmd := &cobra.Command{
		Use:   "retention obs://BUCKET/KEY",
		Short: "Show or set the retention of an object version",
		Long: `Show the retention of an object (its latest version, or --version-id), or set
it with --mode GOVERNANCE|COMPLIANCE and --until (an RFC 3339 time such as
2030-01-01T00:00:00Z), or remove it with --clear.

A retention can always be extended. A GOVERNANCE retention is shortened, removed
or changed to COMPLIANCE only with --bypass-governance, by a user allowed
s3:BypassGovernanceRetention (the bucket's owner is, unless a policy denies it).
A COMPLIANCE retention cannot be shortened or removed by anyone before its date.`,
		Args: exactArgs("obs://BUCKET/KEY"),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := obsParseRemote(args[0])
			if err != nil {
				return err
			}
			if l.Key == "" {
				return usagef("%q names a bucket; give an object, as obs://BUCKET/KEY", args[0])
			}
			setting := mode != "" || until != ""
			var r obsclient.Retention
			switch {
			case clear && setting:
				return usagef("--clear removes the retention; it does not go with --mode and --until")
			case setting && (mode == "" || until == ""):
				return usagef("--mode and --until set a retention together")
			case setting:
				if r.Mode, err = lockModeFlag(mode); err != nil {
					return err
				}
				if r.Until, err = time.Parse(time.RFC3339Nano, until); err != nil {
					return usagef("--until must be an RFC 3339 time such as 2030-01-01T00:00:00Z, got %q", until)
				}
			case bypass && !clear:
				return usagef("--bypass-governance goes with a change: --mode and --until, or --clear")
			}
			c, err := o.plainClient()
			if err != nil {
				return err
			}
			url := l.String()
			if setting || clear {
				if err := c.SetRetention(cmd.Context(), l, versionID, r, bypass); err != nil {
					return err
				}
				if clear {
					o.a.done("removed the retention of %s", versionOf(url, versionID))
				} else {
					o.a.done("retention of %s: %s until %s", versionOf(url, versionID), r.Mode, r.Until.UTC().Format(time.RFC3339))
				}
				return nil
			}
			got, err := c.Retention(cmd.Context(), l, versionID)
			if err != nil {
				return err
			}
			v := obsRetentionView{URL: url, VersionID: versionID, Mode: got.Mode, Until: got.Until.UTC().Format(time.RFC3339Nano)}
			return o.a.show(v, func(w io.Writer) {
				field(w, "Mode", got.Mode)
				field(w, "Retain until", got.Until.Local().Format(time.RFC3339))
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&versionID, "version-id", "", "the version (default: the latest)")
	f.StringVar(&mode, "mode", "", "set a retention: GOVERNANCE or COMPLIANCE (with --until)")
	f.StringVar(&until, "until", "", "the retain-until date, RFC 3339 (with --mode)")
	f.BoolVar(&clear, "clear", false, "remove the retention (a GOVERNANCE one needs --bypass-governance)")
	f.BoolVar(&bypass, "bypass-governance", false, "send x-amz-bypass-governance-retention: shorten or remove a GOVERNANCE retention (needs s3:BypassGovernanceRetention)")
	return cmd
}

// legalHold builds `atelier obs legal-hold obs://BUCKET/KEY [on|off]`.
func (o *obsCmds) legalHold() *cobra.Command {
	var versionID string
	cmd := &cobra.Command{
		Use:   "legal-hold obs://BUCKET/KEY [on|off]",
		Short: "Show, place or remove the legal hold of an object version",
		Long: `Show the legal hold of an object (its latest version, or --version-id), or turn
it on or off. A version with a legal hold on cannot be deleted, whatever its
retention, until the hold is turned off; any user allowed s3:PutObjectLegalHold
may turn it on or off.`,
		Args: func(_ *cobra.Command, args []string) error {
			switch {
			case len(args) == 0:
				return usagef("missing argument obs://BUCKET/KEY")
			case len(args) > 2:
				return usagef("unexpected argument %q", args[2])
			case len(args) == 2 && !strings.EqualFold(args[1], "on") && !strings.EqualFold(args[1], "off"):
				return usagef("the legal hold is on or off, got %q", args[1])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := obsParseRemote(args[0])
			if err != nil {
				return err
			}
			if l.Key == "" {
				return usagef("%q names a bucket; give an object, as obs://BUCKET/KEY", args[0])
			}
			c, err := o.plainClient()
			if err != nil {
				return err
			}
			url := l.String()
			if len(args) == 2 {
				on := strings.EqualFold(args[1], "on")
				if err := c.SetLegalHold(cmd.Context(), l, versionID, on); err != nil {
					return err
				}
				o.a.done("legal hold of %s: %s", versionOf(url, versionID), map[bool]string{true: "ON", false: "OFF"}[on])
				return nil
			}
			hold, err := c.LegalHold(cmd.Context(), l, versionID)
			if err != nil {
				return err
			}
			return o.a.show(obsLegalHoldView{URL: url, VersionID: versionID, LegalHold: hold}, func(w io.Writer) {
				fmt.Fprintln(w, hold)
			})
		},
	}
	cmd.Flags().StringVar(&versionID, "version-id", "", "the version (default: the latest)")
	return cmd
}

// versionOf names a version of the object at url ("" for the latest).
func versionOf(url, versionID string) string {
	if versionID == "" {
		return url
	}
	return url + " (version " + versionID + ")"
}
