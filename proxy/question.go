package proxy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"slices"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/argview"
	"github.com/mcpwarden/mcpwarden/internal/jsonargs"
	"github.com/mcpwarden/mcpwarden/internal/secrets"
	"github.com/mcpwarden/mcpwarden/proxy/ask"
	"github.com/mcpwarden/mcpwarden/proxy/naming"
	"github.com/mcpwarden/mcpwarden/proxy/ondisk"
	"github.com/mcpwarden/mcpwarden/proxy/scan"
	"github.com/mcpwarden/mcpwarden/rules"
)

// What the asker (package ask) is told about a call: a Question, made
// here from the call as the proxy decided it.

// question is the ask about c, whose grants see it as t.
func (s *Server) question(c *call, t ask.Target) *ask.Question {
	return questionOf(c, t, s.tools.inputSchema)
}

// questionOf is the ask about c, whose grants see it as t, showing the
// tool's inputSchema as schema returns it (nil: none).
func questionOf(c *call, t ask.Target, schema func(naming.Tool) map[string]any) *ask.Question {
	q := &ask.Question{
		Session: c.session, Principal: c.principal, Tool: c.tool.Canonical, Server: c.tool.Server,
		Verdict: c.verdict, Client: c.client, NotAsked: c.notAsked,
		Connect: c.method == methodConnect, RootsByInput: c.rootsByInput,
		Digest: argsDigest(c.canonical), Args: c.args, IsPathKey: c.policy.IsPathKey,
		FallbackAllow: c.policy.AskFallback(c.rulesCall()) == rules.FallbackAllow,
		Target:        t,
	}
	if t.Endpoint != "" {
		q.Summary = connectSummary(c, t)
	}
	q.View = func() argview.Call {
		v := argview.Call{Arguments: c.args, Paths: pathViews(c), PathKey: c.policy.IsPathKey}
		if schema != nil {
			v.Schema = schema(c.tool)
		}
		return v
	}
	return q
}

// argsDigest is the digest of a call's canonical arguments, which binds
// an answer by retry to that exact call.
func argsDigest(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}

// rulesCall is the call as the rules see it.
func (c *call) rulesCall() rules.Call {
	// The server resolves relative paths also against the roots mcpwarden
	// hands it (ListRoots: the server's workspace).
	handed, _ := c.policy.Workspace(c.tool.Server)
	return rules.Call{Profile: c.profile, Principal: c.principal, Server: c.tool.Server, Tool: c.tool.Name, Arguments: c.args, Roots: c.roots, UpstreamRoots: handed, Armed: c.armed}
}

// ruleName names the rule that asked about c, for messages.
func ruleName(c *call) string { return ask.RuleName(c.verdict.Rule) }

// DefaultAskTimeout is how long an ask waits for the human when Options
// sets none.
const DefaultAskTimeout = 60 * time.Second

// maxPendingAsks bounds the asks waiting for a multi round-trip retry in
// the embedded store (the shared state's are bounded by their time to
// live).
const maxPendingAsks = 1024

// pathViews are c's path-like values with every form the rules decide
// them on, as argview shows them: each absolute reading, cleaned, and for
// a server on this machine where it leads on disk (as decide resolves it),
// the other forms (NFC), and whether a location is unknown.
func pathViews(c *call) []argview.Path {
	rc := c.rulesCall()
	if c.snap != nil && c.snap.servers[c.tool.Server].ResolveSymlinks || c.policy.IsLocal(c.tool.Server) {
		rc.Physical = ondisk.PhysicalForms(c.policy, rc)
	}
	forms, _ := c.policy.PathForms(rc)
	out := make([]argview.Path, 0, len(forms))
	for _, f := range forms {
		p := argview.Path{Value: f.Value, Unknown: !f.Known}
		seen := map[string]bool{}
		for _, raw := range f.Raw {
			r := argview.Reading{Lexical: filepath.Clean(raw), OnDisk: rc.Physical[raw]}
			seen[r.Lexical], seen[r.OnDisk] = true, true
			p.Readings = append(p.Readings, r)
		}
		for _, form := range f.Forms {
			if !seen[form] {
				p.Also = append(p.Also, form)
			}
		}
		out = append(out, p)
	}
	return out
}

// inputSchema returns t's inputSchema as the upstream listed it, decoded
// from JSON, or nil when the tool is not listed now.
func (ts *toolset) inputSchema(t naming.Tool) map[string]any {
	ts.mu.Lock()
	i := slices.IndexFunc(ts.byServer[t.Server], func(d mcp.Tool) bool { return d.Name == t.Name })
	var def mcp.Tool
	if i >= 0 {
		def = ts.byServer[t.Server][i]
	}
	ts.mu.Unlock()
	if i < 0 {
		return nil
	}
	raw := def.RawInputSchema
	if raw == nil {
		var err error
		if raw, err = json.Marshal(def.InputSchema); err != nil {
			return nil
		}
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}

// askAboutResult holds a result of c that holds the credentials scan found
// while a human is asked about it; preview is the result's text for the
// human (masked here). It is counted as a pending ask while it runs.
func (s *Server) askAboutResult(ctx context.Context, c *call, req mcp.CallToolRequest, findings scan.Findings, preview string) ask.ResultAnswer {
	s.tel.AskStarted()
	defer s.tel.AskEnded()
	q := s.question(c, ask.Target{})
	q.Args = resultArgs(c)
	return s.asker.ResolveResult(ctx, q, req, findings, secrets.Redact(preview, scan.Mask))
}

// resultArgs are c's arguments as forwarded, for the human (argview hides
// the credentials in them). A forwarded tool call keeps only its canonical
// arguments, which are read again.
func resultArgs(c *call) map[string]any {
	args := c.args
	if args == nil && len(c.canonical) > 0 {
		args, _, _ = jsonargs.Parse(c.canonical)
	}
	return args
}
