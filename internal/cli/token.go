package cli

import (
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/client"
)

func newTokenCmd(a *app) *cobra.Command {
	return group("token", "Manage API tokens (X-Auth-Token)",
		newTokenCreateCmd(a), newTokenListCmd(a), newTokenRevokeCmd(a))
}

func newTokenCreateCmd(a *app) *cobra.Command {
	var duration time.Duration
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create an API token from the configured access key",
		Long: `Exchange the configured access key pair for an API token, to send as the
X-Auth-Token header. The token is printed only by this command.`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if duration < time.Second {
				return usagef("--duration must be at least 1s, got %s", duration)
			}
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			c, err := a.clientFor(cfg, a.endpointSource())
			if err != nil {
				return err
			}
			t, err := c.CreateToken(cmd.Context(), api.CreateTokenRequest{
				AccessKey: cfg.AccessKey, SecretKey: cfg.SecretKey,
				DurationSeconds: int64(duration / time.Second),
			})
			if err != nil {
				return err
			}
			if err := a.show(t, func(w io.Writer) { tokenDetail(w, t, time.Now()) }); err != nil {
				return err
			}
			a.note("note: the token is not shown again; send it as the X-Auth-Token header")
			return nil
		},
	}
	cmd.Flags().DurationVar(&duration, "duration", 24*time.Hour, "how long the token is valid")
	return cmd
}

func newTokenListCmd(a *app) *cobra.Command {
	var lf listFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List your API tokens",
		Long:  "List your API tokens (never their secret strings)." + listHelp,
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			l, err := fetchList(cmd.Context(), a, lf, c.ListTokens)
			if err != nil {
				return err
			}
			return a.show(l, func(w io.Writer) { tokenTable(w, l.Items) })
		},
	}
	lf.register(cmd)
	return cmd
}

func newTokenRevokeCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "revoke TOKEN_ID|current",
		Short: "Revoke a token",
		Long: `Revoke a token by its id. "current" names the token that authenticates the
request, which applies only to token-authenticated calls.`,
		Args: exactArgs("TOKEN_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			if err := c.RevokeToken(cmd.Context(), args[0]); err != nil {
				return err
			}
			if args[0] == client.CurrentToken {
				a.done("revoked the current token")
			} else {
				a.done("revoked token %s", args[0])
			}
			return nil
		},
	}
}

func tokenTable(w io.Writer, ts []api.Token) {
	row(w, "TOKEN ID", "USER", "ACCESS KEY", "CREATED", "EXPIRES", "REVOKED")
	for _, t := range ts {
		row(w, t.TokenID, t.User, orDash(t.AccessKey), timeMs(t.CreateTime), timeMs(t.ExpiresAt), yesNo(t.Revoked))
	}
}

func tokenDetail(w io.Writer, t *api.Token, now time.Time) {
	if t.Token != "" {
		field(w, "Token", t.Token)
	}
	field(w, "Token ID", t.TokenID)
	field(w, "User", t.User)
	field(w, "Access key", orDash(t.AccessKey))
	field(w, "Created", timeMs(t.CreateTime))
	field(w, "Expires", relTimeMs(t.ExpiresAt, now))
}
