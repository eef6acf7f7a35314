package cli

import (
	"github.com/spf13/cobra"
)

// newRootCmd builds the whole command tree for one run of a.
func newRootCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "atelier",
		Short: "Atelier: a self-hosted ML platform in the spirit of Huawei ModelArts",
		Long: `Atelier is a self-hosted ML platform: object storage, training jobs,
a model registry and online inference, with identity and access management.

The client reads its config from $ATELIER_CONFIG or ~/.atelier/config.yaml
(write it with ` + "`atelier configure`" + `); ATELIER_ENDPOINT, ATELIER_S3_ENDPOINT,
ATELIER_ACCESS_KEY and ATELIER_SECRET_KEY override its values.

Exit codes: 0 success, 1 failure, 2 usage error.`,
		Args:              subcommandArgs,
		RunE:              helpRunE,
		SilenceUsage:      true,
		SilenceErrors:     true,
		CompletionOptions: cobra.CompletionOptions{HiddenDefaultCmd: true},
	}
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetFlagErrorFunc(flagError)
	root.PersistentFlags().VarP(&a.output, "output", "o", "output format: table, json or yaml")
	root.AddCommand(
		newServerCmd(),
		newVersionCmd(a),
		newConfigureCmd(a),
		newWhoamiCmd(a),
		newUserCmd(a),
		newAccessKeyCmd(a),
		newPolicyCmd(a),
		newTokenCmd(a),
		newObsCmd(a),
		newRunnerCmd(),
		newJobCmd(a),
		newModelCmd(a),
		newDatasetCmd(a),
		newServiceCmd(a),
		newNotebookCmd(a),
		newUsageCmd(a),
		newCapacityCmd(a),
		newConsoleCmd(a),
	)
	return root
}

// group returns a command that only holds subcommands: alone it prints its
// help; with an argument that names no subcommand it is a usage error.
func group(use, short string, subs ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  subcommandArgs,
		RunE:  helpRunE,
	}
	cmd.AddCommand(subs...)
	return cmd
}

// helpRunE prints the command's help.
func helpRunE(cmd *cobra.Command, _ []string) error {
	return cmd.Help()
}
