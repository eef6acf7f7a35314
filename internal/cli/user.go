package cli

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/atelier-dev/atelier/internal/api"
)

func newUserCmd(a *app) *cobra.Command {
	return group("user", "Manage users (admin)",
		newUserCreateCmd(a), newUserListCmd(a), newUserGetCmd(a), newUserDeleteCmd(a))
}

func newUserCreateCmd(a *app) *cobra.Command {
	var admin bool
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a user",
		Long: `Create a user. A new user has no access keys and no policies: create a key
with ` + "`atelier access-key create --user NAME`" + ` and attach policies with
` + "`atelier policy attach POLICY --user NAME`" + `.`,
		Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			u, err := c.CreateUser(cmd.Context(), api.CreateUserRequest{Name: args[0], Admin: admin})
			if err != nil {
				return err
			}
			return a.show(u, func(w io.Writer) { userDetail(w, u) })
		},
	}
	cmd.Flags().BoolVar(&admin, "admin", false, "make the user an administrator")
	return cmd
}

func newUserListCmd(a *app) *cobra.Command {
	var lf listFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List users",
		Long:  "List users." + listHelp,
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			l, err := fetchList(cmd.Context(), a, lf, c.ListUsers)
			if err != nil {
				return err
			}
			return a.show(l, func(w io.Writer) { userTable(w, l.Items) })
		},
	}
	lf.register(cmd)
	return cmd
}

func newUserGetCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "get NAME",
		Short: "Show a user and its policies",
		Args:  exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			u, err := c.GetUser(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return a.show(u, func(w io.Writer) { userDetail(w, u) })
		},
	}
}

func newUserDeleteCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a user",
		Args:  exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			if err := c.DeleteUser(cmd.Context(), args[0]); err != nil {
				return err
			}
			a.done("deleted user %q", args[0])
			return nil
		},
	}
}

func userTable(w io.Writer, us []api.User) {
	row(w, "NAME", "USER ID", "ADMIN", "CREATED")
	for _, u := range us {
		row(w, u.Name, u.UserID, yesNo(u.Admin), timeMs(u.CreateTime))
	}
}

func userDetail(w io.Writer, u *api.User) {
	field(w, "Name", u.Name)
	field(w, "User ID", u.UserID)
	field(w, "Admin", yesNo(u.Admin))
	field(w, "Created", timeMs(u.CreateTime))
	field(w, "Policies", names(u.Policies))
}
