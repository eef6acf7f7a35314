package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
)

// Error codes of policy documents rejected before any request.
const (
	codePolicyRead    errs.Code = "ATL.CLI.0101" // the document cannot be read
	codePolicyNotJSON errs.Code = "ATL.CLI.0102" // the document is not a JSON object
)

func newPolicyCmd(a *app) *cobra.Command {
	return group("policy", "Manage policies and attach them to users",
		newPolicyCreateCmd(a), newPolicyListCmd(a), newPolicyGetCmd(a),
		newPolicyAttachCmd(a, true), newPolicyAttachCmd(a, false), newPolicyDeleteCmd(a))
}

func newPolicyCreateCmd(a *app) *cobra.Command {
	var file, description string
	cmd := &cobra.Command{
		Use:   "create NAME -f FILE|-",
		Short: "Create a policy from a JSON document",
		Long: `Create a named policy from a JSON policy document read from FILE, or from
standard input with -f -. Both the OBS/IAM grammar ("Version": "1.1",
obs:GetObject, obs:::bucket/key*) and the AWS grammar ("Version":
"2012-10-17", s3:GetObject, arn:aws:s3:::bucket/key*) are accepted. The
document is checked to be JSON before it is sent.`,
		Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if file == "" {
				return usagef("required flag -f/--file not set (use -f - to read standard input)")
			}
			doc, err := a.readPolicyDocument(file)
			if err != nil {
				return err
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			p, err := c.CreatePolicy(cmd.Context(), api.CreatePolicyRequest{Name: args[0], Description: description, Document: doc})
			if err != nil {
				return err
			}
			return a.show(p, func(w io.Writer) { policyDetail(w, p) })
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "policy document (JSON); - reads standard input")
	cmd.Flags().StringVar(&description, "description", "", "what the policy is for")
	return cmd
}

// readPolicyDocument reads a policy document from file ("-" is stdin) and
// checks that it is a JSON object.
func (a *app) readPolicyDocument(file string) (json.RawMessage, error) {
	const op errs.Op = "cli.readPolicyDocument"
	var (
		b    []byte
		err  error
		name = file
	)
	if file == "-" {
		b, err = io.ReadAll(a.stdin)
		name = "standard input"
	} else {
		b, err = os.ReadFile(file)
	}
	if err != nil {
		return nil, errs.E(op, errs.IO, codePolicyRead, fmt.Sprintf("cannot read policy document: %v", err))
	}
	if err := checkJSONObject(b); err != nil {
		return nil, errs.E(op, errs.Invalid, codePolicyNotJSON,
			fmt.Sprintf("policy document %s is not valid JSON: %v", name, err),
			errs.Hint(`a policy is a JSON object such as {"Version": "1.1", "Statement": [...]}`))
	}
	return json.RawMessage(b), nil
}

// checkJSONObject reports, with a line and column, why b is not one JSON
// object.
func checkJSONObject(b []byte) error {
	trimmed := bytes.TrimSpace(b)
	if len(trimmed) == 0 {
		return errors.New("it is empty")
	}
	var v any
	err := json.Unmarshal(b, &v)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := position(b, se.Offset)
		return fmt.Errorf("line %d, column %d: %v", line, col, se)
	}
	if err != nil {
		return err
	}
	if _, ok := v.(map[string]any); !ok {
		return errors.New("it is not an object")
	}
	return nil
}

// position converts a byte offset (as json.SyntaxError counts it: the
// bytes read when the error was found) into a 1-based line and column.
func position(b []byte, offset int64) (line, col int) {
	if offset > int64(len(b)) {
		offset = int64(len(b))
	}
	before := b[:max(offset-1, 0)]
	line = bytes.Count(before, []byte("\n")) + 1
	col = len(before) - bytes.LastIndexByte(before, '\n')
	return line, col
}

func newPolicyListCmd(a *app) *cobra.Command {
	var (
		lf   listFlags
		user string
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List policies (or those attached to --user)",
		Long:  "List the policies you can see or, with --user, those attached to a user." + listHelp,
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			list := c.ListPolicies
			if user != "" {
				list = bindUser(user, c.ListUserPolicies)
			}
			l, err := fetchList(cmd.Context(), a, lf, list)
			if err != nil {
				return err
			}
			return a.show(l, func(w io.Writer) { policyTable(w, l.Items) })
		},
	}
	cmd.Flags().StringVar(&user, "user", "", "list the policies attached to this user")
	lf.register(cmd)
	return cmd
}

func newPolicyGetCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "get NAME",
		Short: "Show a policy, its document and its users",
		Args:  exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			p, err := c.GetPolicy(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return a.show(p, func(w io.Writer) { policyDetail(w, p) })
		},
	}
}

// newPolicyAttachCmd builds `policy attach` (attach) or `policy detach`.
func newPolicyAttachCmd(a *app, attach bool) *cobra.Command {
	verb, short, done := "detach", "Detach a policy from a user", "detached policy %q from user %q"
	if attach {
		verb, short, done = "attach", "Attach a policy to a user", "attached policy %q to user %q"
	}
	var user string
	cmd := &cobra.Command{
		Use:   verb + " NAME --user USER",
		Short: short,
		Args:  exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if user == "" {
				return usagef("required flag --user not set")
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			op := c.DetachPolicy
			if attach {
				op = c.AttachPolicy
			}
			if err := op(cmd.Context(), user, args[0]); err != nil {
				return err
			}
			a.done(done, args[0], user)
			return nil
		},
	}
	cmd.Flags().StringVar(&user, "user", "", "the user (required)")
	return cmd
}

func newPolicyDeleteCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a policy",
		Args:  exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			if err := c.DeletePolicy(cmd.Context(), args[0]); err != nil {
				return err
			}
			a.done("deleted policy %q", args[0])
			return nil
		},
	}
}

func policyTable(w io.Writer, ps []api.Policy) {
	row(w, "NAME", "POLICY ID", "OWNER", "DESCRIPTION", "CREATED")
	for _, p := range ps {
		row(w, p.Name, p.PolicyID, orDash(p.Owner), orDash(p.Description), timeMs(p.CreateTime))
	}
}

func policyDetail(w io.Writer, p *api.Policy) {
	field(w, "Name", p.Name)
	field(w, "Policy ID", p.PolicyID)
	field(w, "Owner", orDash(p.Owner))
	field(w, "Description", orDash(p.Description))
	field(w, "Created", timeMs(p.CreateTime))
	field(w, "Users", names(p.Users))
	fmt.Fprintln(w, "Document:")
	var doc bytes.Buffer
	if json.Indent(&doc, p.Document, "  ", "  ") != nil {
		doc.Reset()
		doc.Write(p.Document)
	}
	fmt.Fprintf(w, "  %s\n", doc.String())
}
