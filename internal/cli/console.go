package cli

import (
	"context"
	"fmt"
	"io"
	"os/exec"

	"github.com/spf13/cobra"
)

func newConsoleCmd(a *app) *cobra.Command {
	var open bool
	cmd := &cobra.Command{
		Use:   "console",
		Short: "Print a single-use sign-in link to the web console (--open: open it in the browser)",
		Long: "Prints a link that signs this user in to the web console once, within a minute, without typing a\n" +
			"secret. The console is at <endpoint>/console/; it can also be signed in to with an access key pair.",
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			l, err := c.ConsoleLink(cmd.Context())
			if err != nil {
				return err
			}
			if open {
				return a.openInBrowser(cmd.Context(), l.URL, "the console")
			}
			return a.show(l, func(w io.Writer) { fmt.Fprintln(w, l.URL) })
		},
	}
	cmd.Flags().BoolVar(&open, "open", false, "open the link in the browser ($BROWSER or xdg-open)")
	return cmd
}

// openInBrowser opens a single-use link in $BROWSER or xdg-open, or prints
// it when there is no browser to start.
func (a *app) openInBrowser(ctx context.Context, url, what string) error {
	browser := a.env("BROWSER")
	if browser == "" {
		if p, err := exec.LookPath("xdg-open"); err == nil {
			browser = p
		}
	}
	if browser == "" {
		a.note("no browser found (set BROWSER); open this link within a minute:")
		fmt.Fprintln(a.stdout, url)
		return nil
	}
	b := exec.CommandContext(ctx, browser, url)
	if err := b.Start(); err != nil {
		a.note("cannot start %s (%v); open this link within a minute:", browser, err)
		fmt.Fprintln(a.stdout, url)
		return nil
	}
	_ = b.Process.Release()
	a.done("opened %s in %s", what, browser)
	return nil
}
