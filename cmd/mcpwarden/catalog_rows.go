package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/proxy/naming"
	"github.com/mcpwarden/mcpwarden/rules"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// catalogTimeout bounds listing one upstream's resources and prompts.
const catalogTimeout = 30 * time.Second

// The kinds of catalog rows.
const (
	kindResource = "resource"
	kindTemplate = "template"
	kindPrompt   = "prompt"
)

// A catalogRow is one line of `tools`' catalog: a resource, resource
// template or prompt, and the decision of the request that reaches it.
type catalogRow struct {
	Server string `json:"server"`
	Kind   string `json:"kind"` // resource, template or prompt
	// Name is the resource's URI, the template or the prompt's name, as
	// the upstream gives it.
	Name string `json:"name"`
	// Request is the canonical name the request is decided as.
	Request  string `json:"request"`
	Decision string `json:"decision"` // allow, ask, deny or hidden
	Rule     string `json:"rule"`
	Gate     string `json:"gate,omitempty"`
	// Shadow is set when the server's requests are in shadow mode: see
	// toolRow.Shadow.
	Shadow bool `json:"shadow,omitempty"`
}

// catalogRows lists a server's resources, templates and prompts with
// their decisions. A server that lists none, or fails to, has no rows.
func catalogRows(ctx context.Context, pool *upstream.Pool, policy *rules.Policy, server string) []catalogRow {
	cl, caps, err := pool.Session(server)
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, catalogTimeout)
	defer cancel()
	var rows []catalogRow
	add := func(kind, name string, method mcp.MCPMethod, args map[string]any) {
		call := rules.Call{Server: server, Tool: string(method), Arguments: args}
		v := policy.Decide(call)
		row := catalogRow{Server: server, Kind: kind, Name: name, Request: naming.Canonical(server, string(method)), Decision: v.Decision.String(), Rule: v.Rule, Gate: v.Gate, Shadow: policy.Enforcement(server, "") == rules.EnforceShadow}
		if policy.Hidden(call) {
			row.Decision = "hidden"
		}
		rows = append(rows, row)
	}
	if caps.Resources != nil {
		if res, err := cl.ListResources(ctx, mcp.ListResourcesRequest{}); err == nil {
			for _, r := range res.Resources {
				add(kindResource, r.URI, mcp.MethodResourcesRead, map[string]any{"uri": r.URI})
			}
		}
		if res, err := cl.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{}); err == nil {
			for _, t := range res.ResourceTemplates {
				if t.URITemplate != nil && t.URITemplate.Template != nil {
					add(kindTemplate, t.URITemplate.Raw(), mcp.MethodResourcesRead, nil)
				}
			}
		}
	}
	if caps.Prompts != nil {
		if res, err := cl.ListPrompts(ctx, mcp.ListPromptsRequest{}); err == nil {
			for _, p := range res.Prompts {
				add(kindPrompt, p.Name, mcp.MethodPromptsGet, map[string]any{"name": p.Name})
			}
		}
	}
	return rows
}

func printCatalogTable(w io.Writer, rows []catalogRow) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tKIND\tNAME\tREQUEST\tDECISION\tRULE")
	for _, r := range rows {
		rule := r.Rule
		if r.Gate != "" && r.Gate != rules.GatePolicy {
			rule += " (" + r.Gate + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Server, r.Kind, r.Name, r.Request, shadowDecision(r.Decision, r.Shadow), rule)
	}
	tw.Flush()
}
