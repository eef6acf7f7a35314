package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/atelier-dev/atelier/internal/client"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/sandbox"
	"github.com/atelier-dev/atelier/internal/sandbox/guest"
)

// Exit codes.
const (
	ExitOK      = 0 // success
	ExitFailure = 1 // the command failed
	ExitUsage   = 2 // the command line is wrong
)

// Main runs the atelier command with the process's arguments, streams and
// environment, cancelling on SIGINT and SIGTERM, and returns the exit code.
func Main() int {
	// The sandbox's init starts before user code: no command tree for it.
	if len(os.Args) > 1 && os.Args[1] == guest.Command {
		return guest.Main(os.Args[2:], os.Stderr)
	}
	// Nothing this process inherited reaches a sandbox it starts.
	sandbox.CloseInheritedOnExec()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)
}

// Run runs the atelier command line args (without the program name) and
// returns the exit code. env looks up environment variables.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, env func(string) string) int {
	return newApp(stdin, stdout, stderr, env).run(ctx, args)
}

// run builds the command tree, executes it and reports any error.
func (a *app) run(ctx context.Context, args []string) int {
	if args == nil {
		args = []string{} // nil would make cobra read os.Args
	}
	root := newRootCmd(a)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	if cmd == nil {
		cmd = root
	}
	return a.report(ctx, cmd, err)
}

// report prints err as one line on stderr (two for a usage error) and
// returns the exit code it calls for.
func (a *app) report(ctx context.Context, cmd *cobra.Command, err error) int {
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(a.stderr, "atelier: %s\nRun '%s --help' for usage.\n", oneLine(ue.msg), cmd.CommandPath())
		return ExitUsage
	}
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		fmt.Fprintln(a.stderr, "atelier: interrupted")
		return ExitFailure
	}
	fmt.Fprintln(a.stderr, errorLine(err))
	return ExitFailure
}

// errorLine formats err as "atelier: <message> (<code>); hint: <hint>".
func errorLine(err error) string {
	msg, code, hint := describe(err)
	var b strings.Builder
	b.WriteString("atelier: ")
	b.WriteString(oneLine(msg))
	if code != "" {
		fmt.Fprintf(&b, " (%s)", code)
	}
	if hint != "" {
		b.WriteString("; hint: ")
		b.WriteString(oneLine(hint))
	}
	return b.String()
}

// describe extracts the user-facing message, code and hint of err: those of
// the API's answer for an *client.APIError, else those of the errs chain.
func describe(err error) (msg, code, hint string) {
	var ae *client.APIError
	if errors.As(err, &ae) {
		return ae.Msg, ae.Code, ae.Hint
	}
	msg = errs.UserMessage(err)
	if msg == "" {
		msg = err.Error()
	}
	return msg, string(errs.CodeOf(err)), string(errs.HintOf(err))
}

// oneLine folds s onto one line.
func oneLine(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' }), " ")
}

// usageError is a mistake in the command line; it exits with ExitUsage.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// usagef builds a *usageError.
func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// flagError turns cobra's flag parsing errors into usage errors.
func flagError(_ *cobra.Command, err error) error {
	return &usageError{msg: err.Error()}
}

// exactArgs accepts exactly the named positional arguments.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		switch {
		case len(args) < len(names):
			return usagef("missing argument %s", strings.Join(names[len(args):], " "))
		case len(args) > len(names):
			return usagef("unexpected argument %q", args[len(names)])
		}
		for i, a := range args {
			if strings.TrimSpace(a) == "" {
				return usagef("argument %s is empty", names[i])
			}
		}
		return nil
	}
}

// subcommandArgs rejects arguments to a command that only groups others:
// the first one names an unknown subcommand.
func subcommandArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += fmt.Sprintf("; did you mean %q?", s[0])
	}
	return &usageError{msg: msg}
}
