package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"golang.org/x/tools/txtar"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/approvals"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/rules"
	"github.com/mcpwarden/mcpwarden/upstream"
)

var updateExchanges = flag.Bool("update", false, "rewrite the golden exchanges under testdata/exchanges")

// The files of a golden exchange. The first two are its input; the rest
// are what the test saw and compares (or, with -update, rewrites).
const (
	exchangeSetup    = "setup.json"     // the global policy and the human's answer to an ask
	exchangeRequest  = "request.json"   // the client's JSON-RPC request
	exchangeUpstream = "upstream.jsonl" // the requests the upstreams received, one a line
	exchangeResponse = "response.json"  // the JSON-RPC response the client received
	exchangeAudit    = "audit.jsonl"    // the audit events, with times, ids and hashes replaced
)

// A goldenSetup is what a golden exchange configures: the global
// policy over the servers "up" and "hidden", and how the one resolver
// answers an ask ("" = no resolver).
type goldenSetup struct {
	Policy rules.PolicySpec `json:"policy"`
	Answer string           `json:"answer"`
}

// TestGoldenExchanges replays every testdata/exchanges/*.txtar: a whole
// round trip of one request through the proxy, from the client's request
// to what each upstream receives, what the client receives and what the
// audit log says.
func TestGoldenExchanges(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "exchanges", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no golden exchanges under testdata/exchanges")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			t.Parallel()
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			got := replayExchange(t, archiveFile(t, ar, exchangeSetup), archiveFile(t, ar, exchangeRequest))
			if *updateExchanges {
				writeExchange(t, file, ar, got)
				return
			}
			for _, name := range []string{exchangeUpstream, exchangeResponse, exchangeAudit} {
				if diff := cmp.Diff(archiveFile(t, ar, name), got[name]); diff != "" {
					t.Errorf("%s (-golden +got):\n%s", name, diff)
				}
			}
		})
	}
}

// archiveFile returns the contents of the file name in ar.
func archiveFile(t *testing.T, ar *txtar.Archive, name string) string {
	t.Helper()
	for _, f := range ar.Files {
		if f.Name == name {
			return string(f.Data)
		}
	}
	if *updateExchanges {
		return ""
	}
	t.Fatalf("the archive has no %s", name)
	return ""
}

// writeExchange rewrites the archive at path with the outputs in got.
func writeExchange(t *testing.T, path string, ar *txtar.Archive, got map[string]string) {
	t.Helper()
	out := &txtar.Archive{Comment: ar.Comment}
	for _, name := range []string{exchangeSetup, exchangeRequest} {
		out.Files = append(out.Files, txtar.File{Name: name, Data: []byte(archiveFile(t, ar, name))})
	}
	for _, name := range []string{exchangeUpstream, exchangeResponse, exchangeAudit} {
		out.Files = append(out.Files, txtar.File{Name: name, Data: []byte(got[name])})
	}
	if err := os.WriteFile(path, txtar.Format(out), 0o644); err != nil {
		t.Fatal(err)
	}
}

// replayExchange sends request through a proxy set up as setup says and
// returns the outputs of the exchange by file name.
func replayExchange(t *testing.T, setup, request string) map[string]string {
	t.Helper()
	var s goldenSetup
	if err := json.Unmarshal([]byte(setup), &s); err != nil {
		t.Fatalf("%s: %v", exchangeSetup, err)
	}
	seen := &upstreamLog{}
	specs := map[string]upstream.Spec{}
	for _, name := range []string{"up", "hidden"} {
		specs[name] = upstream.Spec{Transport: upstream.TransportHTTP, URL: goldenUpstream(name, seen).URL(t)}
	}
	pool := upstream.Start(t.Context(), specs, nil)
	t.Cleanup(func() { pool.Close() })
	for name := range specs {
		if err := pool.Err(name); err != nil {
			t.Fatal(err)
		}
	}
	p, err := rules.Compile(rules.Spec{Global: s.Policy, Servers: map[string]rules.ServerSpec{"up": {}, "hidden": {}}})
	if err != nil {
		t.Fatal(err)
	}
	sink := &memorySink{}
	o := Options{Upstream: pool, Policy: p, Audit: audit.New(sink, audit.Config{})}
	if s.Answer != "" {
		answer, err := approvals.ParseAnswer(s.Answer)
		if err != nil {
			t.Fatalf("%s: %v", exchangeSetup, err)
		}
		o.Resolvers = []approvals.Resolver{&standInResolver{d: approvals.Decision{Answer: answer, Via: approvals.ViaResolver, Who: "golden"}}}
	}
	srv, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	adopt(t, srv)
	send := rawSession(t, srv)
	seen.start()
	resp := send(strings.TrimSpace(request))
	return map[string]string{
		exchangeUpstream: seen.lines(),
		exchangeResponse: plainJSON(t, resp, "  "),
		exchangeAudit:    normalAudit(t, sink),
	}
}

// goldenUpstream is the upstream called name in a golden exchange: the
// tools echo and write and the resource file:///srv/readme, served over
// streamable HTTP. It notes in seen every tools/call, resources/read and
// prompts/get it gets, with their params.
func goldenUpstream(name string, seen *upstreamLog) *testkit.StandIn {
	hooks := &server.Hooks{}
	hooks.AddBeforeAny(func(_ context.Context, _ any, m mcp.MCPMethod, message any) { seen.add(name, m, message) })
	s := testkit.NewStandIn(server.WithResourceCapabilities(false, false), server.WithHooks(hooks))
	s.AddTool(mcp.NewTool("echo", mcp.WithString("text")), testkit.Echo)
	s.AddTool(mcp.NewTool("write", mcp.WithString("path")), testkit.Reply("written"))
	s.MCP().AddResource(mcp.NewResource("file:///srv/readme", "readme"), func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, Text: "read me on " + name}}, nil
	})
	return s
}

// An upstreamLog is what the golden upstreams received once the exchange
// started: one JSON line per request that acts (not the listings and
// pings the pool sends on its own).
type upstreamLog struct {
	mu      sync.Mutex
	started bool
	got     []string
}

// actingMethods are the requests an upstreamLog notes.
var actingMethods = []mcp.MCPMethod{mcp.MethodToolsCall, mcp.MethodResourcesRead, mcp.MethodPromptsGet}

func (l *upstreamLog) start() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.started = true
}

func (l *upstreamLog) add(server string, m mcp.MCPMethod, message any) {
	if !slices.Contains(actingMethods, m) {
		return
	}
	var params any
	switch r := message.(type) {
	case *mcp.CallToolRequest:
		params = map[string]any{"name": r.Params.Name, "arguments": json.RawMessage(r.Params.RawArguments)}
	case *mcp.ReadResourceRequest:
		params = r.Params
	case *mcp.GetPromptRequest:
		params = r.Params
	}
	line, err := json.Marshal(map[string]any{"server": server, "method": m, "params": params})
	if err != nil {
		line = []byte(fmt.Sprintf(`{"server":%q,"method":%q,"error":%q}`, server, m, err))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.started {
		l.got = append(l.got, string(line))
	}
}

// lines returns the requests noted, one a line.
func (l *upstreamLog) lines() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, line := range l.got {
		b.WriteString(line + "\n")
	}
	return b.String()
}

// volatileAuditFields are the audit fields that differ from run to run;
// normalAudit replaces a value in them by its name in angle brackets.
var volatileAuditFields = []string{"time", "duration_ms", "policy_sha256", "prev_sha256"}

// linkedAuditFields hold ids that events share (a result's decision_id is
// its decision's id); normalAudit numbers them in order of appearance, so
// the links still show.
var linkedAuditFields = []struct{ field, kind string }{{"session", "session"}, {"decision_id", "id"}, {"id", "id"}}

// normalAudit is the audit log in sink, one event a line with keys sorted
// and volatile values replaced.
func normalAudit(t *testing.T, sink *memorySink) string {
	t.Helper()
	sink.mu.Lock()
	lines := slices.Clone(sink.lines)
	sink.mu.Unlock()
	numbered := map[string]string{}
	var b strings.Builder
	for _, line := range lines {
		var ev map[string]any
		dec := json.NewDecoder(strings.NewReader(line))
		dec.UseNumber()
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		for _, k := range volatileAuditFields {
			if _, ok := ev[k]; ok {
				ev[k] = "<" + k + ">"
			}
		}
		for _, f := range linkedAuditFields {
			k, kind := f.field, f.kind
			v, ok := ev[k].(string)
			if !ok {
				continue
			}
			if numbered[kind+v] == "" {
				n := 1
				for _, got := range numbered {
					if strings.HasPrefix(got, "<"+kind+"-") {
						n++
					}
				}
				numbered[kind+v] = fmt.Sprintf("<%s-%d>", kind, n)
			}
			ev[k] = numbered[kind+v]
		}
		b.WriteString(plainJSON(t, ev, ""))
	}
	return b.String()
}

// plainJSON is v as JSON, keys sorted, indented by indent if not empty,
// with no HTML escapes (the files are read by people), ending in a
// newline.
func plainJSON(t *testing.T, v any, indent string) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", indent)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
