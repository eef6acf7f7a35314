package cli

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/atelier-dev/atelier/internal/api"
)

// Access key states, as the API spells them.
const (
	keyActive   = "active"
	keyDisabled = "disabled"
)

func newAccessKeyCmd(a *app) *cobra.Command {
	return group("access-key", "Manage access keys",
		newAccessKeyCreateCmd(a), newAccessKeyListCmd(a), newAccessKeyGetCmd(a),
		newAccessKeyDeleteCmd(a),
		newAccessKeyStatusCmd(a, "disable", keyDisabled, "Disable an access key (requests signed with it are refused)"),
		newAccessKeyStatusCmd(a, "enable", keyActive, "Enable a disabled access key"))
}

func newAccessKeyCreateCmd(a *app) *cobra.Command {
	var req api.CreateAccessKeyRequest
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create an access key and print its secret, once",
		Long: `Create an access key pair for yourself or, as an administrator, for --user.
The secret key is printed only by this command: store it now.`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			k, err := c.CreateAccessKey(cmd.Context(), req)
			if err != nil {
				return err
			}
			if err := a.show(k, func(w io.Writer) { accessKeyDetail(w, k) }); err != nil {
				return err
			}
			a.note("note: the secret key is not shown again; store it now")
			return nil
		},
	}
	cmd.Flags().StringVar(&req.User, "user", "", "user that owns the key (default: you)")
	cmd.Flags().StringVar(&req.Description, "description", "", "what the key is for")
	return cmd
}

func newAccessKeyListCmd(a *app) *cobra.Command {
	var (
		lf   listFlags
		user string
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List access keys (yours, or --user's)",
		Long:  "List your access keys or, as an administrator, those of --user." + listHelp,
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			l, err := fetchList(cmd.Context(), a, lf, bindUser(user, c.ListAccessKeys))
			if err != nil {
				return err
			}
			return a.show(l, func(w io.Writer) { accessKeyTable(w, l.Items) })
		},
	}
	cmd.Flags().StringVar(&user, "user", "", "list the keys of this user (default: you)")
	lf.register(cmd)
	return cmd
}

func newAccessKeyGetCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "get ACCESS_KEY",
		Short: "Show an access key (never its secret)",
		Args:  exactArgs("ACCESS_KEY"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			k, err := c.GetAccessKey(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return a.show(k, func(w io.Writer) { accessKeyDetail(w, k) })
		},
	}
}

func newAccessKeyDeleteCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "delete ACCESS_KEY",
		Short: "Delete an access key",
		Args:  exactArgs("ACCESS_KEY"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			if err := c.DeleteAccessKey(cmd.Context(), args[0]); err != nil {
				return err
			}
			a.done("deleted access key %s", args[0])
			return nil
		},
	}
}

// newAccessKeyStatusCmd builds `access-key disable` and `access-key enable`.
// Table output confirms the change; JSON and YAML print the updated key.
func newAccessKeyStatusCmd(a *app, verb, status, short string) *cobra.Command {
	return &cobra.Command{
		Use:   verb + " ACCESS_KEY",
		Short: short,
		Args:  exactArgs("ACCESS_KEY"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			k, err := c.UpdateAccessKey(cmd.Context(), args[0], api.UpdateAccessKeyRequest{Status: status})
			if err != nil {
				return err
			}
			return a.show(k, func(w io.Writer) {
				row(w, verb+"d access key "+k.AccessKey+" of user "+k.User)
			})
		},
	}
}

func accessKeyTable(w io.Writer, ks []api.AccessKey) {
	row(w, "ACCESS KEY", "USER", "STATUS", "DESCRIPTION", "CREATED")
	for _, k := range ks {
		row(w, k.AccessKey, k.User, k.Status, orDash(k.Description), timeMs(k.CreateTime))
	}
}

func accessKeyDetail(w io.Writer, k *api.AccessKey) {
	field(w, "Access key", k.AccessKey)
	if k.SecretKey != "" {
		field(w, "Secret key", k.SecretKey)
	}
	field(w, "User", k.User)
	field(w, "Status", k.Status)
	field(w, "Description", orDash(k.Description))
	field(w, "Created", timeMs(k.CreateTime))
}
