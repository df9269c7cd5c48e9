package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mcpwarden/mcpwarden/internal/policydiff"
	"github.com/mcpwarden/mcpwarden/internal/recorded"
	"github.com/mcpwarden/mcpwarden/internal/suggest"
)

func newPolicyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Write a policy from what the audit log recorded: suggest rules, diff two policies",
	}
	cmd.AddCommand(newPolicySuggestCmd(), newPolicyDiffCmd())
	return cmd
}

func newPolicySuggestCmd() *cobra.Command {
	var (
		configPath string
		asJSON     bool
	)
	cmd := &cobra.Command{
		Use:   "suggest --config FILE AUDIT...",
		Short: "Suggest the narrowest allow rules that cover what the audit log recorded",
		Long: `suggest reads the decisions recorded in the audit logs (each AUDIT with its
rotated files; several replicas' logs may be given) and proposes the
narrowest allow rules that cover the requests the config does not already
allow by a rule of its own: paths generalised to their narrowest common
folder inside the server's workspace (a path outside it is named exactly
and flagged), URLs to their scheme and host, commands and network/connect
hosts and ports exactly. Each rule is shown with the requests that justify
it and their count. It never suggests what a deny rule refused, nor an ask
a person refused; those, and requests recorded with a redacted value at a
key a rule would name, are listed as not suggested. Every rule is checked
by deciding the recorded requests again with it added.

The output is a config fragment: the allow list to add under policy: in
the config, with comments. --json prints the same as one JSON object.
Record a session in shadow mode (enforce: shadow) to see every request a
team makes without blocking any.`,
		Example: `  mcpwarden policy suggest --config mcpwarden.yaml .mcpwarden/audit.jsonl
  mcpwarden policy suggest --config mcpwarden.yaml --json replica-a.jsonl replica-b.jsonl`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, logs []string) error {
			st, err := loadOfflineSetup(configPath)
			if err != nil {
				return err
			}
			reqs, err := readRecorded(logs)
			if err != nil {
				return err
			}
			res, err := suggest.Suggest(reqs, st.Suggesting())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), res)
			}
			return res.WriteYAML(cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVarP(&configPath, "config", "c", "", "config file")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the suggestions as one JSON object")
	return cmd
}

func newPolicyDiffCmd() *cobra.Command {
	var (
		oldPath, newPath string
		asJSON           bool
	)
	cmd := &cobra.Command{
		Use:   "diff --config OLD --against NEW AUDIT...",
		Short: "List the recorded requests two configs decide differently",
		Long: `diff replays every request recorded in the audit logs (each AUDIT with its
rotated files) through the policy of OLD and of NEW, with the code the
proxy decides with, and lists every decision that changes, grouped by the
rule that decides under NEW: how OLD decided them, how many, and the first
examples. Changes that widen (ask or deny under OLD, allow under NEW) come
first and are marked WIDENS.

Exit status: 0 no decision changes, 1 some do, 2 bad usage or config.`,
		Example: `  mcpwarden policy diff --config mcpwarden.yaml --against mcpwarden.new.yaml .mcpwarden/audit.jsonl`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, logs []string) error {
			if newPath == "" {
				return &codeError{code: exitUsage, err: fmt.Errorf("--against NEW is required: the config to compare with --config")}
			}
			old, err := loadOfflineSetup(oldPath)
			if err != nil {
				return err
			}
			next, err := loadOfflineSetup(newPath)
			if err != nil {
				return err
			}
			reqs, err := readRecorded(logs)
			if err != nil {
				return err
			}
			res := policydiff.Replay(reqs, old.Replayed(), next.Replayed())
			if asJSON {
				err = writeJSON(cmd.OutOrStdout(), res)
			} else {
				printPolicyDiff(cmd.OutOrStdout(), res)
			}
			if err != nil {
				return err
			}
			if res.Changed > 0 {
				return &codeError{code: exitError, err: errSilent}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&oldPath, "config", "c", "", "the config as it is (OLD)")
	cmd.Flags().StringVar(&newPath, "against", "", "the config to compare it with (NEW)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the changes as one JSON object")
	return cmd
}

// readRecorded reads the decided requests of the audit logs; a log that
// cannot be read is bad input.
func readRecorded(logs []string) ([]recorded.Request, error) {
	var reqs []recorded.Request
	err := recorded.Read(logs, func(r recorded.Request) error {
		reqs = append(reqs, r)
		return nil
	})
	if err != nil {
		return nil, &codeError{code: exitUsage, err: err}
	}
	return reqs, nil
}

func writeJSON(w io.Writer, v any) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	e.SetEscapeHTML(false)
	return e.Encode(v)
}

func printPolicyDiff(w io.Writer, res policydiff.Result) {
	fmt.Fprintf(w, "%d recorded requests replayed: %d decisions change, %d of them widen (ask or deny → allow).\n", res.Replayed, res.Changed, res.Widened)
	for _, g := range res.Groups {
		mark := "changed"
		if g.Widened {
			mark = "WIDENS "
		}
		by := g.Rule
		if g.Gate != "" {
			by += " (in " + g.Gate + ")"
		}
		fmt.Fprintf(w, "\n%s  %s by %s: %d\n", mark, strings.ToUpper(g.Decision.String()), by, g.Count)
		for _, f := range g.From {
			fmt.Fprintf(w, "  was %s (%s): %d\n", f.Decision, f.Rule, f.Count)
		}
		for _, e := range g.Examples {
			fmt.Fprintf(w, "    e.g. %s  %s → %s  (%s)\n", e.Request, e.Old, e.New, e.Where)
			if len(e.Redacted) > 0 {
				fmt.Fprintf(w, "         recorded redacted at %s: decided on the redacted text, not what was sent\n", strings.Join(e.Redacted, ", "))
			}
		}
	}
}
