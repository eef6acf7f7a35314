package cli

import (
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	serverapp "github.com/atelier-dev/atelier/internal/app"
	"github.com/atelier-dev/atelier/internal/config"
)

// newServerCmd is `atelier server`.
func newServerCmd() *cobra.Command {
	var (
		dataDir, listen, s3Listen, nbListen, configFile, metaDSN, s3Domain string
		logLevel, logFormat                                                string
	)
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run the Atelier server (REST API, S3 API, controllers)",
		Long: `Run the Atelier server.

On first start it creates the admin user and writes <data-dir>/admin.yaml (mode 0600),
a client config, so that ATELIER_CONFIG=<data-dir>/admin.yaml atelier ... works at once.
Its keys never change; its endpoints follow the listen addresses.`,
		Example: `  atelier server
  atelier server --data-dir /srv/atelier --listen 0.0.0.0:8080 --config atelier.yaml
  atelier server --meta postgres://atelier:secret@db:5432/atelier`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(cmd.ErrOrStderr(), logLevel, logFormat)
			if err != nil {
				return usagef("%v", err)
			}
			if dataDir == "" {
				home, err := os.UserHomeDir()
				if err != nil {
					return fmt.Errorf("cannot find the home directory for the default --data-dir: %w", err)
				}
				dataDir = config.DefaultDataDir(home)
			}
			cfg := &config.Server{DataDir: dataDir, Listen: listen, S3Listen: s3Listen, NotebookListen: nbListen, MetaDSN: metaDSN}
			if configFile != "" {
				if err := cfg.LoadFile(configFile); err != nil {
					return err
				}
			}
			if s3Domain != "" {
				cfg.S3Domain = s3Domain
			}
			m := config.LocalMachine()
			m.GPUs = config.DetectGPUs(cmd.Context(), config.ExecProber)
			cfg.ApplyDefaults(m)
			// Engines left out are detected by the server, which knows
			// which interpreters its sandbox can run.
			return serverapp.Run(cmd.Context(), cfg, buildVersion().Version, log)
		},
	}
	f := cmd.Flags()
	f.StringVar(&dataDir, "data-dir", "", "data directory (default ~/.atelier)")
	f.StringVar(&listen, "listen", config.DefaultListen, "REST API address HOST:PORT (port 0 picks a free one)")
	f.StringVar(&s3Listen, "s3-listen", config.DefaultS3Listen, "S3 API address HOST:PORT")
	f.StringVar(&nbListen, "notebook-listen", config.DefaultNotebookListen, "notebook proxy address HOST:PORT: Jupyter is served there, on its own origin")
	f.StringVar(&s3Domain, "s3-domain", "", "DNS name for virtual-host-style S3 addressing (bucket.DOMAIN); overrides s3_domain in --config")
	f.StringVar(&configFile, "config", "", "server config file (YAML)")
	f.StringVar(&metaDSN, "meta", "", "metadata store: postgres://… (default: SQLite in the data dir)")
	f.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	f.StringVar(&logFormat, "log-format", "text", "log format: text or json")
	return cmd
}

func newLogger(w interface{ Write([]byte) (int, error) }, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q is not debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q is not text or json", format)
}
