package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mcpwarden/mcpwarden/internal/app"
	"github.com/mcpwarden/mcpwarden/internal/config"
	"github.com/mcpwarden/mcpwarden/internal/jsonargs"
	"github.com/mcpwarden/mcpwarden/rules"
)

// Exit codes of check: the decision.
const (
	exitAsk  = 3
	exitDeny = 4
)

func newCheckCmd() *cobra.Command {
	var (
		configPath string
		profile    string
		args       []string
		after      []string
		overLimit  bool
		asJSON     bool
	)
	cmd := &cobra.Command{
		Use:     "check --config FILE mcp:SERVER:TOOL ['{JSON arguments}'] [--arg key=value ...] [--profile NAME]",
		Aliases: []string{"explain"},
		Short:   "Decide a tool call or other request offline and explain why",
		Long: `check decides a call the way the running proxy would, with the same code,
and prints the decision, the rule that made it and every rule considered.
Arguments are a JSON object, or --arg key=value pairs (values are strings).

Any request kind can be decided: a tool call (mcp:fs:read_file), or a
request named by its method (mcp:fs:resources/read, mcp:fs:prompts/get,
mcp:fs:completion/complete, mcp:fs:resources/subscribe,
mcp:fs:logging/setLevel, mcp:fs:sampling/createMessage,
mcp:fs:elicitation/create), whose arguments are the request's params
(uri, name, arguments, ref, argument), or a sandboxed server's outbound
connection (mcp:fs:network/connect, arguments host and port; the host is
normalised as the egress proxy normalises it, and an address the proxy
refuses unless a rule names it is denied here too). --profile decides it
for a client profile. --after LABEL decides it as in a session where a
request labelled LABEL has already returned (flow rules); it is repeatable.
The limits a request counts against are listed; --over-limit decides it
as the request beyond each one's max. --json prints it all as one JSON
object, the config's warnings included.

Under shadow mode (enforce: shadow) the decision is the one the policy
would make, and check notes that the running proxy would forward the
request all the same (--json: "shadow": true); the exit status stays the
decision's, so that a script checks the policy it is about to enforce.

Exit status: 0 allow, 3 ask, 4 deny, 2 bad input.`,
		Example: `  mcpwarden check --config mcpwarden.yaml mcp:fs:write_file '{"path":"/etc/passwd"}'
  mcpwarden check --config mcpwarden.yaml mcp:fs:read_text_file --arg path=./README.md
  mcpwarden check --config mcpwarden.yaml mcp:fs:resources/read '{"uri":"file:///srv/app/.env"}' --profile ci
  mcpwarden check --config mcpwarden.yaml mcp:github:network/connect '{"host":"api.github.com","port":443}'
  mcpwarden check --config mcpwarden.yaml mcp:mail:send_mail --after untrusted_input
  mcpwarden check --config mcpwarden.yaml mcp:mail:send_mail --over-limit`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, pos []string) error {
			st, err := loadOfflineSetup(configPath)
			if err != nil {
				return err
			}
			if meant := canonicalMeant(pos[0], st.Config.ServerNames()); meant != "" {
				return &codeError{code: exitUsage, err: fmt.Errorf("tool %q: want a canonical name mcp:<server>:<tool>; did you mean %s?", pos[0], meant)}
			}
			call, err := parseCheckCall(pos, args)
			if err != nil {
				return &codeError{code: exitUsage, err: err}
			}
			if err := st.CheckServer(call.Server); err != nil {
				return &codeError{code: exitUsage, err: err}
			}
			var warnings []config.Warning
			if asJSON {
				warnings = st.Config.Lint()
			} else {
				printLint(cmd.ErrOrStderr(), st)
			}
			if profile != "" {
				if err := st.CheckProfile(profile); err != nil {
					return &codeError{code: exitUsage, err: fmt.Errorf("--profile %w", err)}
				}
				call.Profile = profile
			}
			if call.Armed, err = st.Armed(after); err != nil {
				return &codeError{code: exitUsage, err: fmt.Errorf("--after %w", err)}
			}
			ex := st.Decide(call, overLimit)
			shadow := st.ShadowForwards(call, ex.Verdict)
			if asJSON {
				if err := printCheckJSON(cmd.OutOrStdout(), call, ex, shadow, warnings); err != nil {
					return err
				}
			} else {
				printExplanation(cmd.OutOrStdout(), call, ex)
				if shadow {
					fmt.Fprintf(cmd.OutOrStdout(), "shadow mode: would be forwarded (enforce: shadow), audited as a %s with shadow: true; the exit status is still the decision's\n", ex.Verdict.Decision)
				}
			}
			switch ex.Verdict.Decision {
			case rules.Allow:
				return nil
			case rules.Ask:
				return &codeError{code: exitAsk, err: errSilent}
			default:
				return &codeError{code: exitDeny, err: errSilent}
			}
		},
	}
	cmd.Flags().StringVarP(&configPath, "config", "c", "", "config file")
	cmd.Flags().StringArrayVar(&args, "arg", nil, "argument as key=value (string value); repeatable")
	cmd.Flags().StringVar(&profile, "profile", "", "decide for this client profile")
	cmd.Flags().StringArrayVar(&after, "after", nil, "decide as after a request with this label returned; repeatable")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the decision, the rules considered and the config's warnings as one JSON object")
	cmd.Flags().BoolVar(&overLimit, "over-limit", false, "decide as a request beyond the max of every limit it counts against")
	return cmd
}

// parseCheckCall reads "mcp:<server>:<tool>" and the arguments.
func parseCheckCall(pos, kv []string) (rules.Call, error) {
	raw := ""
	if len(pos) == 2 {
		raw = pos[1]
	}
	args, _, err := jsonargs.Parse([]byte(raw))
	if err != nil {
		return rules.Call{}, argumentsError(err, raw)
	}
	for _, pair := range kv {
		k, v, ok := strings.Cut(pair, "=")
		if !ok || k == "" {
			return rules.Call{}, fmt.Errorf("--arg %q: want key=value", pair)
		}
		if _, dup := args[k]; dup {
			return rules.Call{}, fmt.Errorf("--arg %q: argument %q is given twice", pair, k)
		}
		args[k] = v
	}
	return app.ParseCall(pos[0], args)
}

func printExplanation(w io.Writer, c rules.Call, ex rules.Explanation) {
	v := ex.Verdict
	fmt.Fprintf(w, "%s  mcp:%s:%s\n", strings.ToUpper(v.Decision.String()), c.Server, c.Tool)
	if c.Profile != "" {
		fmt.Fprintf(w, "  profile:    %s\n", c.Profile)
	}
	for _, a := range c.Armed {
		fmt.Fprintf(w, "  after:      %s\n", a.Label)
	}
	if v.Rule != "" {
		fmt.Fprintf(w, "  decided by: %s", v.Rule)
		if v.Gate != "" {
			fmt.Fprintf(w, " (in %s)", v.Gate)
		}
		fmt.Fprintln(w)
	}
	if v.Reason != "" {
		fmt.Fprintf(w, "  because:    %s\n", v.Reason)
	}
	if len(ex.Steps) == 0 {
		return
	}
	fmt.Fprintln(w, "\nrules considered:")
	for _, s := range ex.Steps {
		mark := "  "
		if s.Matched {
			mark = "✔ "
		}
		where := s.Where
		if where == "" {
			where = s.Gate + " " + s.List.String()
		}
		fmt.Fprintf(w, "  %s%-28s %s\n", mark, where, s.Rule)
		if s.Why != "" {
			fmt.Fprintf(w, "      %s\n", s.Why)
		}
	}
}
