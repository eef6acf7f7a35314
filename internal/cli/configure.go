package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/atelier-dev/atelier/internal/client"
	"github.com/atelier-dev/atelier/internal/config"
	"github.com/atelier-dev/atelier/internal/errs"
)

// codeConfigureMissing: configure lacks values and cannot prompt for them.
const codeConfigureMissing errs.Code = "ATL.CLI.0201"

// noVerifyHint is added to the hint of a failed verification.
const noVerifyHint = "pass --no-verify to save the config without checking"

// configureFlags are the flags of `atelier configure`.
type configureFlags struct {
	values   config.ClientConfig // from --endpoint, --s3-endpoint, --access-key, --secret-key
	from     string
	noVerify bool
}

func newConfigureCmd(a *app) *cobra.Command {
	var f configureFlags
	cmd := &cobra.Command{
		Use:   "configure",
		Short: "Write the client config (endpoint and access key)",
		Long: `Write the client config to $ATELIER_CONFIG or ~/.atelier/config.yaml
(mode 0600). Values come, later ones winning, from the existing file, from
--from FILE (another client config, e.g. the server's <data-dir>/admin.yaml)
and from the flags. Missing values are prompted for on a terminal; without
one, the missing flags are an error.

Unless --no-verify is given, the configuration is checked by calling the
server (GET /api/v1/whoami) before it is written.`,
		Example: `  atelier configure --from ~/.atelier/admin.yaml
  atelier configure --endpoint http://127.0.0.1:8080 --s3-endpoint http://127.0.0.1:9000 \
    --access-key AK... --secret-key SK...`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.configure(cmd.Context(), f)
		},
	}
	fl := cmd.Flags()
	fl.Var(&urlFlag{key: "endpoint", dst: &f.values.Endpoint}, "endpoint", "REST endpoint, e.g. http://127.0.0.1:8080")
	fl.Var(&urlFlag{key: "s3-endpoint", dst: &f.values.S3Endpoint}, "s3-endpoint", "S3 endpoint, e.g. http://127.0.0.1:9000")
	fl.StringVar(&f.values.AccessKey, "access-key", "", "access key")
	fl.StringVar(&f.values.SecretKey, "secret-key", "", "secret key")
	fl.StringVar(&f.from, "from", "", "copy values from this client config file")
	fl.BoolVar(&f.noVerify, "no-verify", false, "write the config without calling the server")
	return cmd
}

// configure merges, completes, verifies and writes the client config.
func (a *app) configure(ctx context.Context, f configureFlags) error {
	const op errs.Op = "cli.configure"
	path := a.configPath()
	cfg := a.existingConfig(path)
	if f.from != "" {
		from, err := config.ReadClientConfigFile(f.from)
		if err != nil {
			return err
		}
		overlay(cfg, from)
	}
	overlay(cfg, &f.values)
	if err := a.complete(op, cfg); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	user := ""
	if !f.noVerify {
		who, err := a.verify(ctx, op, cfg, path)
		if err != nil {
			return err
		}
		user = who
	}
	if err := config.WriteClientConfig(path, cfg); err != nil {
		return err
	}
	if user != "" {
		fmt.Fprintf(a.stdout, "configured %s as %s\n", path, user)
	} else {
		fmt.Fprintf(a.stdout, "configured %s\n", path)
	}
	return nil
}

// existingConfig is the config already at path, or an empty one; a file
// that does not parse is reported and ignored, since it is about to be
// replaced.
func (a *app) existingConfig(path string) *config.ClientConfig {
	cfg, err := config.ReadClientConfigFile(path)
	switch {
	case err == nil:
		return cfg
	case !errs.Is(err, errs.NotFound):
		a.note("warning: ignoring the existing config: %s", errs.UserMessage(err))
	}
	return &config.ClientConfig{}
}

// overlay copies the non-empty values of src into dst.
func overlay(dst, src *config.ClientConfig) {
	for _, p := range []struct {
		d *string
		s string
	}{
		{&dst.Endpoint, src.Endpoint}, {&dst.S3Endpoint, src.S3Endpoint},
		{&dst.AccessKey, src.AccessKey}, {&dst.SecretKey, src.SecretKey},
	} {
		if v := strings.TrimSpace(p.s); v != "" {
			*p.d = v
		}
	}
}

// complete fills the missing required values by prompting on a terminal, or
// fails naming the flags that would supply them.
func (a *app) complete(op errs.Op, cfg *config.ClientConfig) error {
	missing := cfg.Missing()
	if len(missing) == 0 {
		return nil
	}
	if !a.interactive {
		flags := make([]string, len(missing))
		for i, k := range missing {
			flags[i] = "--" + strings.ReplaceAll(k, "_", "-")
		}
		return errs.E(op, errs.Invalid, codeConfigureMissing,
			errs.Hint("pass them as flags or copy a config with --from FILE; on a terminal configure prompts for them"),
			"missing "+strings.Join(flags, ", ")+" (standard input is not a terminal, so they cannot be prompted for)")
	}
	return a.promptMissing(cfg)
}

// promptMissing asks for every empty value of cfg.
func (a *app) promptMissing(cfg *config.ClientConfig) error {
	var err error
	if cfg.Endpoint == "" {
		if cfg.Endpoint, err = a.prompt("Endpoint", "http://127.0.0.1:8080"); err != nil {
			return err
		}
	}
	if cfg.S3Endpoint == "" {
		if cfg.S3Endpoint, err = a.prompt("S3 endpoint", s3Guess(cfg.Endpoint)); err != nil {
			return err
		}
	}
	if cfg.AccessKey == "" {
		if cfg.AccessKey, err = a.prompt("Access key", ""); err != nil {
			return err
		}
	}
	if cfg.SecretKey == "" {
		if cfg.SecretKey, err = a.promptSecret("Secret key"); err != nil {
			return err
		}
	}
	return nil
}

// s3Guess proposes the S3 endpoint of a server at endpoint: the same host
// on the default S3 port, 9000.
func s3Guess(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil || u.Hostname() == "" {
		return ""
	}
	return u.Scheme + "://" + net.JoinHostPort(u.Hostname(), "9000")
}

// verify calls whoami with cfg and returns the user's name.
func (a *app) verify(ctx context.Context, op errs.Op, cfg *config.ClientConfig, path string) (string, error) {
	c, err := a.clientFor(cfg, path)
	if err != nil {
		return "", err
	}
	who, err := c.Whoami(ctx)
	if err == nil {
		return who.Name, nil
	}
	if errors.Is(err, context.Canceled) {
		return "", err
	}
	msg, code, hint := describe(err)
	kind := errs.KindOf(err)
	var ae *client.APIError
	switch {
	case errors.As(err, &ae):
		kind = ae.Kind()
		if hint == "" {
			hint = "check --access-key and --secret-key"
		}
		hint += "; or " + noVerifyHint
	case errs.CodeOf(err) == client.CodeUnreachable:
		hint = "is `atelier server` running at that address? check --endpoint, or " + noVerifyHint
	default:
		hint = noVerifyHint
	}
	return "", errs.E(op, kind, errs.Code(code), errs.Hint(hint), "config not saved: "+msg)
}

// urlFlag is a flag whose value must be an http(s) URL.
type urlFlag struct {
	key string
	dst *string
}

func (u *urlFlag) String() string {
	if u.dst == nil {
		return ""
	}
	return *u.dst
}

func (u *urlFlag) Type() string { return "URL" }

func (u *urlFlag) Set(s string) error {
	if err := config.ClientValidateURL(u.key, s); err != nil {
		return errors.New(errs.UserMessage(err))
	}
	*u.dst = strings.TrimRight(s, "/")
	return nil
}
