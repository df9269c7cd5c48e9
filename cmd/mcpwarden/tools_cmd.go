package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/mcpwarden/mcpwarden/internal/app"
	"github.com/mcpwarden/mcpwarden/proxy/naming"
	"github.com/mcpwarden/mcpwarden/proxy/toolscreen"
	"github.com/mcpwarden/mcpwarden/rules"
)

// A toolRow is one line of `tools`: an upstream tool and the decision a call
// to it without arguments gets.
type toolRow struct {
	Server   string `json:"server"`
	Tool     string `json:"tool"`
	Name     string `json:"name"` // canonical mcp:<server>:<tool>
	WireName string `json:"wire_name"`
	// Decision is allow, ask, deny or hidden (denied outright, so not listed
	// to clients).
	Decision string `json:"decision"`
	Rule     string `json:"rule"`
	Gate     string `json:"gate,omitempty"`
	// Shadow is set when the server's requests are in shadow mode
	// (enforce: shadow): Decision is what the policy would do, and a call
	// is forwarded whatever it is (a tool denied outright is listed).
	Shadow bool `json:"shadow,omitempty"`
	// Suspicious says why the tool's description looks aimed at the
	// model (toolscreen.Tool); "" when it does not.
	Suspicious string `json:"suspicious,omitempty"`
}

// A failedServer is an upstream that did not start.
type failedServer struct {
	Server string `json:"server"`
	Error  string `json:"error"`
}

type toolsReport struct {
	Tools []toolRow `json:"tools"`
	// Catalog is the upstreams' resources, resource templates and
	// prompts, each with the decision of the request that reaches it.
	Catalog []catalogRow   `json:"catalog"`
	Failed  []failedServer `json:"failed"`
	// Sandboxes say what confines each stdio server's process.
	Sandboxes []sandboxRow `json:"sandboxes"`
	// Protocols say which protocol version each server that started is
	// spoken to in: 2026-07-28 or later (stateless, server/discover) or
	// an earlier one (the initialize handshake).
	Protocols []protocolRow `json:"protocols"`
	// Shadow says where shadow mode is on; left out when it is off.
	Shadow *rules.ShadowScope `json:"shadow,omitempty"`
}

// A protocolRow is the protocol version mcpwarden speaks with one server.
type protocolRow struct {
	Server   string `json:"server"`
	Protocol string `json:"protocol"`
}

// A sandboxRow is what confines one server's process: the launcher's
// report, or "off".
type sandboxRow struct {
	Server  string `json:"server"`
	Sandbox string `json:"sandbox"`
}

func newToolsCmd(g *globals) *cobra.Command {
	var (
		configPath string
		asJSON     bool
		offline    bool
	)
	cmd := &cobra.Command{
		Use:   "tools --config FILE",
		Short: "List every upstream tool, resource and prompt with its decision",
		Long: `tools starts the upstream servers of the config, lists their tools and prints,
for each: server, tool, the wire name clients see, and the decision a call
without arguments gets (allow, ask, deny, or hidden: denied outright and not
listed to clients) with the rule that made it. It then lists the servers'
resources, resource templates and prompts with the decision of the request
that reaches each: mcp:<server>:resources/read with the resource's uri,
mcp:<server>:resources/read without arguments for a template,
mcp:<server>:prompts/get with the prompt's name. Rules with conditions on
arguments do not hold for a call without arguments, so a tool shown as ask
may still be allowed or denied for particular arguments: ask mcpwarden check
about a real call. Last come what confines each stdio server (sandbox:) and the
protocol version each server is spoken to in (protocol:): 2026-07-28 for a
server mcpwarden reached with server/discover, an earlier one for a server
of the initialize handshake. --offline starts no server and needs none of
their secrets: one row per server, tool "*", is the decision of a tool no
rule names. --json prints {"tools": [...], "catalog": [...], "failed":
[...], "sandboxes": [...], "protocols": [...]}.

Exit status: 0 every upstream started, 1 one or more failed (they are
listed with their error), 2 the config is invalid.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if offline {
				st, err := loadOfflineSetup(configPath)
				if err != nil {
					return err
				}
				return printToolsReport(cmd.OutOrStdout(), offlineTools(st), asJSON)
			}
			st, err := loadSetup(configPath)
			if err != nil {
				return err
			}
			printLint(cmd.ErrOrStderr(), st)
			listing, redactor, err := listUpstreams(cmd, st, g, "error")
			if err != nil {
				return err
			}
			defer listing.Close()

			rep := toolsReport{Tools: []toolRow{}, Catalog: []catalogRow{}, Failed: []failedServer{}, Sandboxes: []sandboxRow{}, Protocols: []protocolRow{}, Shadow: shadowScope(st.Policy)}
			scheme := st.Naming()
			for _, l := range listing.Servers {
				if l.Err != nil {
					rep.Failed = append(rep.Failed, failedServer{Server: l.Server, Error: redactor.String(l.Err.Error())})
					continue
				}
				rep.Protocols = append(rep.Protocols, protocolRow{Server: l.Server, Protocol: l.Protocol})
				if l.Sandbox != "" {
					rep.Sandboxes = append(rep.Sandboxes, sandboxRow{Server: l.Server, Sandbox: l.Sandbox})
				}
				for _, t := range l.Tools {
					call := rules.Call{Server: l.Server, Tool: t.Name}
					v := st.Policy.Decide(call)
					row := toolRow{
						Server:     l.Server,
						Tool:       t.Name,
						Name:       naming.Canonical(l.Server, t.Name),
						WireName:   scheme.Wire(l.Server, t.Name),
						Decision:   v.Decision.String(),
						Rule:       v.Rule,
						Gate:       v.Gate,
						Suspicious: toolscreen.Tool(t),
						Shadow:     st.Policy.Enforcement(l.Server, "") == rules.EnforceShadow,
					}
					if st.Policy.Hidden(call) {
						row.Decision = "hidden"
					}
					rep.Tools = append(rep.Tools, row)
				}
				rep.Catalog = append(rep.Catalog, catalogRows(cmd.Context(), listing.Pool, st.Policy, l.Server)...)
			}
			if err := printToolsReport(cmd.OutOrStdout(), rep, asJSON); err != nil {
				return err
			}
			if len(rep.Failed) > 0 {
				return &codeError{code: exitError, err: fmt.Errorf("%d of %d upstream servers failed to start", len(rep.Failed), len(listing.Servers))}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&configPath, "config", "c", "", "config file")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for scripts")
	cmd.Flags().BoolVar(&offline, "offline", false, "start no server: show, per server, the decision of a tool no rule names (needs none of the servers' secrets)")
	return cmd
}

// offlineTools is the report of tools --offline: no server is started, so
// each server has one row, tool "*", with the decision a call without
// arguments to a tool that no rule names gets.
func offlineTools(st *app.Setup) toolsReport {
	rep := toolsReport{Tools: []toolRow{}, Catalog: []catalogRow{}, Failed: []failedServer{}, Sandboxes: []sandboxRow{}, Shadow: shadowScope(st.Policy)}
	for _, server := range st.Config.ServerNames() {
		call := rules.Call{Server: server, Tool: "*"}
		v := st.Policy.Decide(call)
		row := toolRow{Server: server, Tool: "*", Name: naming.Canonical(server, "*"), Decision: v.Decision.String(), Rule: v.Rule, Gate: v.Gate, Shadow: st.Policy.Enforcement(server, "") == rules.EnforceShadow}
		if st.Policy.Hidden(call) {
			row.Decision = "hidden"
		}
		rep.Tools = append(rep.Tools, row)
	}
	return rep
}

// printToolsReport prints rep as a table, or as JSON.
func printToolsReport(w io.Writer, rep toolsReport, asJSON bool) error {
	if !asJSON {
		printToolsTable(w, rep)
		return nil
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

func printToolsTable(w io.Writer, rep toolsReport) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tTOOL\tWIRE NAME\tDECISION\tRULE")
	for _, r := range rep.Tools {
		rule := r.Rule
		if r.Gate != "" && r.Gate != "policy" {
			rule += " (" + r.Gate + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Server, r.Tool, r.WireName, shadowDecision(r.Decision, r.Shadow), rule)
	}
	for _, f := range rep.Failed {
		fmt.Fprintf(tw, "%s\t-\t-\terror\t%s\n", f.Server, oneLine(f.Error))
	}
	tw.Flush()
	for _, r := range rep.Tools {
		if r.Suspicious != "" {
			fmt.Fprintf(w, "warning: %s looks aimed at the model: its %s\n", r.Name, r.Suspicious)
		}
	}
	printCatalogTable(w, rep.Catalog)
	printShadow(w, rep.Shadow)
	for _, r := range rep.Sandboxes {
		fmt.Fprintf(w, "sandbox: %s: %s\n", r.Server, r.Sandbox)
	}
	for _, r := range rep.Protocols {
		fmt.Fprintf(w, "protocol: %s: %s\n", r.Server, r.Protocol)
	}
}

func oneLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " ..."
	}
	return s
}
