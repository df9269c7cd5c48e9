package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/user"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpwarden/mcpwarden/internal/approvals"
	"github.com/mcpwarden/mcpwarden/internal/argview"
	"github.com/mcpwarden/mcpwarden/internal/config"
	"github.com/mcpwarden/mcpwarden/internal/state"

	"github.com/mcpwarden/mcpwarden/internal/textcut"
)

// approvalFlags find the running instance's token file.
type approvalFlags struct {
	config    string
	tokenFile string
}

func (f *approvalFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&f.config, "config", "c", "", "the running instance's config file (its ask.token_file is read)")
	cmd.Flags().StringVar(&f.tokenFile, "token-file", "", "the running instance's approvals token file (instead of --config)")
}

// client returns an API client for the running instance.
func (f *approvalFlags) client() (*approvals.Client, error) {
	path := f.tokenFile
	switch {
	case path != "":
	case f.config != "":
		cfg, err := config.LoadOffline(f.config, os.Environ()) // the servers' secrets are not needed here
		if err != nil {
			return nil, &codeError{code: exitUsage, err: fmt.Errorf("%w (or give --token-file)", err)}
		}
		if cfg.Ask.Approvals != config.ApprovalsLocal {
			return nil, &codeError{code: exitUsage, err: fmt.Errorf("config %s does not set ask.approvals: local, so no approvals page runs; add it (ask: {approvals: local}) and restart mcpwarden serve", f.config)}
		}
		if path, err = cfg.TokenFilePath(os.Getenv); err != nil {
			return nil, &codeError{code: exitUsage, err: err}
		}
	default:
		// Without flags: the one running instance's token file in the
		// state directory.
		files, err := config.TokenFiles(os.Getenv)
		if err != nil || len(files) != 1 {
			return nil, &codeError{code: exitUsage, err: fmt.Errorf("found %d approvals token files in mcpwarden's state directory: give --config FILE (of the running mcpwarden) or --token-file FILE", len(files))}
		}
		path = files[0]
	}
	tf, err := approvals.ReadTokenFile(path)
	if err != nil {
		return nil, err
	}
	return &approvals.Client{TokenFile: tf}, nil
}

func newApprovalsCmd() *cobra.Command {
	var (
		f      approvalFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "approvals --config FILE | --token-file FILE",
		Short: "List the tool calls waiting for approval in a running mcpwarden",
		Long: `approvals lists the calls a running mcpwarden (with ask.approvals: local)
holds for approval: id, how long each has waited, tool, client, the rule
that asked and the redacted arguments. Answer one with mcpwarden approve ID
[--session] or mcpwarden deny ID, or on the approvals page. The instance is
found through its token file (ask.token_file, else a private file in
$XDG_RUNTIME_DIR/mcpwarden, $XDG_STATE_HOME/mcpwarden or
~/.local/state/mcpwarden; without flags the only one there).
--json prints the pending asks and the recent decisions as JSON.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			s, err := c.Snapshot(cmd.Context())
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(s)
			}
			printPending(out, s)
			return nil
		},
	}
	f.add(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// printPending writes the pending asks as a table, then each one's
// principal and arguments as the approval form lays them out (argview:
// one line per argument, keys and values quoted, path forms under them,
// undeclared keys under a warning), a line over maxArgShown characters
// cut, saying how much (--json and the approvals page show all). Every
// value comes from clients and upstreams, so control, bidirectional and
// invisible characters are shown as escapes: they could drive the
// terminal (`\r`, escape sequences) or reorder what it shows.
func printPending(out io.Writer, s approvals.Snapshot) {
	if len(s.Pending) == 0 {
		fmt.Fprintln(out, "no tool call is waiting for approval")
		return
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tWAITED\tTOOL\tCLIENT\tRULE")
	for _, p := range s.Pending {
		rule := p.Rule
		if p.Gate != "" {
			rule += " (" + p.Gate + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", clean(p.ID), (time.Duration(p.WaitedMS) * time.Millisecond).Round(time.Second), clean(p.Tool), clean(cmp.Or(p.Client, "-")), clean(rule))
	}
	tw.Flush()
	for _, p := range s.Pending {
		fmt.Fprintf(out, "\nask %s, from %s:\n", clean(p.ID), clean(cmp.Or(p.Principal, "-")))
		lines := p.Lines
		if lines == nil { // an older mcpwarden: its arguments and paths as they are
			lines = argview.Render(argview.Call{Arguments: p.Arguments, Paths: p.Paths}, 0).Lines
		}
		for _, l := range lines {
			fmt.Fprintf(out, "  %s\n", cutArg(clean(l)))
		}
	}
	fmt.Fprintln(out, "\nanswer with: mcpwarden approve ID [--session | --folder] | mcpwarden deny ID")
}

// maxArgShown bounds one line of the approvals listing.
const maxArgShown = 2000

// cutArg cuts a line too long for the listing, at a character boundary,
// saying how much is hidden and where to see it.
func cutArg(s string) string {
	head, hidden := textcut.Head(s, maxArgShown)
	if hidden == 0 {
		return s
	}
	return fmt.Sprintf("%s… (%d more characters hidden; see --json or the approvals page)", head, hidden)
}

// clean is s with every character that could drive the terminal or hide
// or reorder text shown as an escape, on one line (argview.Visible: the
// server sends these texts escaped already, so `\` is kept as it is).
func clean(s string) string { return argview.Visible(s) }

func newApproveCmd() *cobra.Command {
	var (
		f       approvalFlags
		session bool
		folder  bool
	)
	cmd := &cobra.Command{
		Use:   "approve ID [--session | --folder] --config FILE | --token-file FILE",
		Short: "Allow a tool call waiting for approval",
		Long: `approve allows the pending call ID (see mcpwarden approvals) once, or with
--session also the later calls of that session to the same tool under the
same rule (for a call with paths: exactly the same paths, every form of
them; for a call without paths: the calls without paths), or with --folder
the later calls whose paths are all under the call's folders.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a := state.AllowOnce
			switch {
			case session && folder:
				return &codeError{code: exitUsage, err: fmt.Errorf("give --session or --folder, not both")}
			case session:
				a = state.AllowSession
			case folder:
				a = state.AllowFolder
			}
			return decideCmd(cmd, &f, args[0], a)
		},
	}
	f.add(cmd)
	cmd.Flags().BoolVar(&session, "session", false, "allow for the rest of the session, not just this call")
	cmd.Flags().BoolVar(&folder, "folder", false, "allow for the rest of the session anything under the call's folders")
	return cmd
}

func newDenyCmd() *cobra.Command {
	var f approvalFlags
	cmd := &cobra.Command{
		Use:   "deny ID --config FILE | --token-file FILE",
		Short: "Deny a tool call waiting for approval",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return decideCmd(cmd, &f, args[0], state.Deny)
		},
	}
	f.add(cmd)
	return cmd
}

func decideCmd(cmd *cobra.Command, f *approvalFlags, id string, a state.Answer) error {
	c, err := f.client()
	if err != nil {
		return err
	}
	who := "mcpwarden approve"
	if a == state.Deny {
		who = "mcpwarden deny"
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		who = u.Username // the audit reason says the channel
	}
	if err := c.Decide(cmd.Context(), id, a, who); err != nil {
		return err
	}
	switch a {
	case state.AllowOnce:
		fmt.Fprintf(cmd.OutOrStdout(), "allowed %s once\n", id)
	case state.AllowSession:
		fmt.Fprintf(cmd.OutOrStdout(), "allowed %s for the session\n", id)
	case state.AllowFolder:
		fmt.Fprintf(cmd.OutOrStdout(), "allowed %s under its folders for the session\n", id)
	default:
		fmt.Fprintf(cmd.OutOrStdout(), "denied %s\n", id)
	}
	return nil
}
