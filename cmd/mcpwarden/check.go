package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mcpwarden/mcpwarden/internal/config"
	"github.com/mcpwarden/mcpwarden/internal/jsonargs"
	"github.com/mcpwarden/mcpwarden/internal/spelling"
	"github.com/mcpwarden/mcpwarden/proxy"
	"github.com/mcpwarden/mcpwarden/proxy/connect"
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
			if _, ok := st.Config.Servers[call.Server]; !ok {
				return &codeError{code: exitUsage, err: unknownServer(st.Config, call.Server)}
			}
			var warnings []config.Warning
			if asJSON {
				warnings = st.Config.Lint()
			} else {
				printLint(cmd.ErrOrStderr(), st)
			}
			if profile != "" {
				if _, ok := st.Config.Profiles[profile]; !ok {
					return &codeError{code: exitUsage, err: unknownProfile(st.Config, profile)}
				}
				call.Profile = profile
			}
			if call.Armed, err = armedFor(st.Policy, after); err != nil {
				return &codeError{code: exitUsage, err: err}
			}
			ex := st.Decide(call, overLimit)
			if asJSON {
				if err := printCheckJSON(cmd.OutOrStdout(), call, ex, warnings); err != nil {
					return err
				}
			} else {
				printExplanation(cmd.OutOrStdout(), call, ex)
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

// unknownServer is the error for a check of a server cfg does not have.
func unknownServer(cfg *config.Config, server string) error {
	names := cfg.ServerNames()
	err := fmt.Errorf("no server %q in the config %s; servers: %s", server, cfg.File, strings.Join(names, ", "))
	if meant := spelling.Closest(server, names); meant != "" {
		err = fmt.Errorf("%w; did you mean mcp:%s:...?", err, meant)
	}
	return err
}

// unknownProfile is the error for a --profile cfg does not have.
func unknownProfile(cfg *config.Config, profile string) error {
	names := slices.Sorted(maps.Keys(cfg.Profiles))
	if len(names) == 0 {
		return fmt.Errorf("--profile %q: the config %s has no profiles; define it under profiles: (see docs/teams.md), or drop --profile", profile, cfg.File)
	}
	err := fmt.Errorf("--profile %q: the config has no such profile; profiles: %s", profile, strings.Join(names, ", "))
	if meant := spelling.Closest(profile, names); meant != "" {
		err = fmt.Errorf("%w; did you mean %q?", err, meant)
	}
	return err
}

// armedFor returns the labels of --after as armed by an earlier call; a
// label the policy does not define is an error.
func armedFor(p *rules.Policy, labels []string) ([]rules.Arming, error) {
	var out []rules.Arming
	for _, l := range labels {
		if !p.HasLabel(l) {
			err := fmt.Errorf("--after %q: the config defines no such label under labels", l)
			names := p.LabelNames()
			switch meant := spelling.Closest(l, names); {
			case meant != "":
				err = fmt.Errorf("%w; did you mean %q?", err, meant)
			case len(names) > 0:
				err = fmt.Errorf("%w; its labels are %s", err, strings.Join(names, ", "))
			}
			return nil, err
		}
		out = append(out, rules.Arming{Label: l})
	}
	return out, nil
}

// parseCheckCall reads "mcp:<server>:<tool>" and the arguments.
func parseCheckCall(pos, kv []string) (rules.Call, error) {
	rest, ok := strings.CutPrefix(pos[0], "mcp:")
	server, tool, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 || server == "" || tool == "" {
		return rules.Call{}, fmt.Errorf("tool %q: want a canonical name mcp:<server>:<tool>", pos[0])
	}
	if strings.Contains(tool, "/") && !slices.Contains(proxy.RequestKinds(), tool) {
		return rules.Call{}, fmt.Errorf("%q: %q is not a tool name (tool names have no \"/\") nor a request kind mcpwarden decides (%s)", pos[0], tool, strings.Join(proxy.RequestKinds(), ", "))
	}
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
	if tool == rules.ToolConnect {
		if args, err = connect.Args(args); err != nil {
			return rules.Call{}, err
		}
	}
	return rules.Call{Server: server, Tool: tool, Arguments: args}, nil
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
			where = s.Gate + " " + string(s.List)
		}
		fmt.Fprintf(w, "  %s%-28s %s\n", mark, where, s.Rule)
		if s.Why != "" {
			fmt.Fprintf(w, "      %s\n", s.Why)
		}
	}
}
