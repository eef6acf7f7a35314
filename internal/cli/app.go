package cli

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/atelier-dev/atelier/internal/client"
	"github.com/atelier-dev/atelier/internal/config"
	"github.com/atelier-dev/atelier/internal/errs"
)

// app is the state of one Run: its streams, environment and global flags.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	env            func(string) string
	output         outputFormat // -o
	interactive    bool         // stdin is a terminal: prompt for missing values
	lines          *bufio.Reader
}

func newApp(stdin io.Reader, stdout, stderr io.Writer, env func(string) string) *app {
	return &app{
		stdin:       stdin,
		stdout:      stdout,
		stderr:      stderr,
		env:         env,
		output:      formatTable,
		interactive: isTerminal(stdin),
	}
}

// isTerminal reports whether r is a terminal.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// configPath is where the client config is read and written.
func (a *app) configPath() string {
	home := a.env("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return config.ClientConfigPath(a.env, home)
}

// loadConfig loads the client config with the environment's overrides.
func (a *app) loadConfig() (*config.ClientConfig, error) {
	return config.LoadClientConfig(a.configPath(), a.env)
}

// client returns a client for the configured server.
func (a *app) client() (*client.Client, error) {
	cfg, err := a.loadConfig()
	if err != nil {
		return nil, err
	}
	return a.clientFor(cfg, a.endpointSource())
}

// endpointSource names where the endpoint of the loaded config comes from:
// the environment variable or the config file.
func (a *app) endpointSource() string {
	if a.env(config.ClientEnvEndpoint) != "" {
		return config.ClientEnvEndpoint
	}
	return a.configPath()
}

// clientFor returns a client for cfg; where names the endpoint's source in
// hints.
func (a *app) clientFor(cfg *config.ClientConfig, where string) (*client.Client, error) {
	return client.New(cfg, client.WithConfigPath(where), client.WithUserAgent("atelier-cli/"+buildVersion().Version))
}

// done prints a confirmation of a change, in table output only: with -o
// json or yaml a command that shows no resource prints nothing.
func (a *app) done(format string, args ...any) {
	if a.output == formatTable {
		fmt.Fprintf(a.stdout, format+"\n", args...)
	}
}

// note prints a remark for the user on stderr, whatever the output format.
func (a *app) note(format string, args ...any) {
	fmt.Fprintf(a.stderr, format+"\n", args...)
}

// prompt asks for a value on stderr and reads a line from stdin; def is
// shown and returned for an empty answer.
func (a *app) prompt(label, def string) (string, error) {
	if def != "" {
		fmt.Fprintf(a.stderr, "%s [%s]: ", label, def)
	} else {
		fmt.Fprintf(a.stderr, "%s: ", label)
	}
	line, err := a.readLine()
	if err != nil {
		return "", err
	}
	if line == "" {
		return def, nil
	}
	return line, nil
}

// promptSecret asks for a secret; on a terminal it is read without echo.
func (a *app) promptSecret(label string) (string, error) {
	fmt.Fprintf(a.stderr, "%s: ", label)
	if f, ok := a.stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(a.stderr)
		if err != nil {
			return "", errs.E("cli.prompt", errs.IO, fmt.Sprintf("cannot read %s: %v", label, err))
		}
		return strings.TrimSpace(string(b)), nil
	}
	return a.readLine()
}

// readLine reads one line of stdin without its line ending.
func (a *app) readLine() (string, error) {
	if a.lines == nil {
		a.lines = bufio.NewReader(a.stdin)
	}
	line, err := a.lines.ReadString('\n')
	if err != nil && (err != io.EOF || line == "") {
		if err == io.EOF {
			return "", errs.E("cli.prompt", errs.Invalid, "no answer: standard input ended")
		}
		return "", errs.E("cli.prompt", errs.IO, fmt.Sprintf("cannot read standard input: %v", err))
	}
	return strings.TrimSpace(line), nil
}
