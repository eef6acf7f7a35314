package cli

import (
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/atelier-dev/atelier/internal/api"
)

func newWhoamiCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "whoami",
		Short: "Show the user the configured credentials belong to",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			w, err := c.Whoami(cmd.Context())
			if err != nil {
				return err
			}
			return a.show(w, func(tw io.Writer) { whoamiTable(tw, w, time.Now()) })
		},
	}
}

func whoamiTable(w io.Writer, who *api.Whoami, now time.Time) {
	field(w, "Name", who.Name)
	field(w, "User ID", who.UserID)
	field(w, "Admin", yesNo(who.Admin))
	field(w, "Auth", who.AuthMethod)
	field(w, "Access key", orDash(who.AccessKey))
	field(w, "Policies", names(who.Policies))
	if who.Temporary {
		field(w, "Temporary", "yes")
	}
	if who.ExpiresAt != 0 {
		field(w, "Expires", relTimeMs(who.ExpiresAt, now))
	}
}
