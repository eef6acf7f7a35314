package cli

import (
	"github.com/spf13/cobra"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/runner"
)

// newRunnerCmd is `atelier runner`, started by an executor for one attempt
// of a job, (--instance) for one instance of a service or (--notebook) for
// one run of a notebook; hidden from help.
func newRunnerCmd() *cobra.Command {
	var (
		cfg      runner.Config
		instance string
		notebook string
		logLevel string
	)
	cmd := &cobra.Command{
		Use:    "runner",
		Short:  "Run one attempt of a training job, one service instance or one notebook (started by the server's executor)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(cmd.ErrOrStderr(), logLevel, "text")
			if err != nil {
				return usagef("%v", err)
			}
			cfg.Logger = log
			switch {
			case instance != "" && notebook != "":
				return usagef("--instance and --notebook cannot be given together")
			case instance != "":
				if cfg.JobID != "" || cmd.Flags().Changed("attempt") {
					return usagef("--instance cannot be given with --job or --attempt")
				}
				err = runner.RunInstance(cmd.Context(), runner.InstanceConfig{Server: cfg.Server, InstanceID: instance,
					Dir: cfg.Dir, TokenFile: cfg.TokenFile, WorkDir: cfg.WorkDir, DataDir: cfg.DataDir, Logger: log})
			case notebook != "":
				if cfg.JobID != "" || cmd.Flags().Changed("attempt") {
					return usagef("--notebook cannot be given with --job or --attempt")
				}
				err = runner.RunNotebook(cmd.Context(), runner.NotebookConfig{Server: cfg.Server, NotebookID: notebook,
					Dir: cfg.Dir, TokenFile: cfg.TokenFile, WorkDir: cfg.WorkDir, DataDir: cfg.DataDir, Logger: log})
			default:
				err = runner.Run(cmd.Context(), cfg)
			}
			if errs.CodeOf(err) == runner.CodeUsage {
				return usagef("%s", errs.UserMessage(err))
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Server, "server", "", "the server's URL (advertise_url)")
	f.StringVar(&cfg.JobID, "job", "", "job id")
	f.IntVar(&cfg.Attempt, "attempt", 0, "attempt number (1-based)")
	f.StringVar(&instance, "instance", "", "service instance id (instead of --job and --attempt)")
	f.StringVar(&notebook, "notebook", "", "notebook id (instead of --job and --attempt)")
	f.StringVar(&cfg.Dir, "dir", "", "the attempt, instance or notebook dir (final.json, the log)")
	f.StringVar(&cfg.TokenFile, "token-file", "", "file with the attempt's, instance's or notebook's runner token")
	f.StringVar(&cfg.WorkDir, "work-dir", "", "the server's work_dir (job dirs, caches)")
	f.StringVar(&cfg.DataDir, "data-dir", "", "the server's data dir, hidden from user code")
	f.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	return cmd
}
