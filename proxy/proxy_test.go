package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/rules"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// richResult is what the upstream's "rich" tool returns: every field a
// result can carry, to check the proxy passes it through unchanged.
const richResult = `{"_meta":{"trace":"t-1"},"content":[{"type":"text","text":"done","annotations":{"audience":["user"],"priority":0.5}},{"type":"image","data":"aGk=","mimeType":"image/png"}],"structuredContent":{"n":12345678901234567890,"ok":true},"isError":true}`

// startUpstream starts a pool of one upstream, "up": a stand-in with the
// tools echo, write and rich, served over streamable HTTP.
func startUpstream(t *testing.T) (*upstream.Pool, *testkit.StandIn) {
	t.Helper()
	rec := testkit.NewStandIn()
	rec.AddTool(mcp.NewTool("echo", mcp.WithString("text")), testkit.Echo)
	rec.AddTool(mcp.NewTool("write", mcp.WithString("path")), testkit.Reply("written"))
	rec.AddTool(mcp.NewTool("rich"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		raw := json.RawMessage(richResult)
		return mcp.ParseCallToolResult(&raw)
	})
	pool := upstream.Start(t.Context(), map[string]upstream.Spec{
		"up": {Transport: upstream.TransportHTTP, URL: rec.URL(t)},
	}, nil)
	t.Cleanup(func() { pool.Close() })
	if err := pool.Err("up"); err != nil {
		t.Fatal(err)
	}
	return pool, rec
}

// memorySink keeps audit lines in memory, or fails every write.
type memorySink struct {
	mu    sync.Mutex
	lines []string
	fail  bool
}

func (m *memorySink) Write(_ context.Context, line []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail {
		return errors.New("disk full")
	}
	m.lines = append(m.lines, strings.TrimSpace(string(line)))
	return nil
}

func (m *memorySink) Close() error { return nil }

func (m *memorySink) events(t *testing.T) []audit.Event {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []audit.Event
	for _, l := range m.lines {
		var e audit.Event
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		out = append(out, e)
	}
	return out
}

type env struct {
	pool *upstream.Pool
	srv  *Server
	rec  *testkit.StandIn
	sink *memorySink
}

func newEnv(t *testing.T, policy rules.PolicySpec, auditCfg audit.Config, sink *memorySink) *env {
	t.Helper()
	pool, rec := startUpstream(t)
	p, err := rules.Compile(rules.Spec{Global: policy, Servers: map[string]rules.ServerSpec{"up": {}}})
	if err != nil {
		t.Fatal(err)
	}
	log := audit.New(sink, auditCfg)
	srv, err := New(Options{Upstream: pool, Policy: p, Audit: log})
	if err != nil {
		t.Fatal(err)
	}
	adopt(t, srv)
	return &env{pool: pool, srv: srv, rec: rec, sink: sink}
}

func (e *env) client(t *testing.T) *client.Client {
	t.Helper()
	return testkit.Connect(t, e.srv.MCP(), "")
}

var allowAll = rules.PolicySpec{Allow: []string{"mcp:up:*"}}

func TestArgumentsAreForwardedAsChecked(t *testing.T) {
	t.Parallel()
	e := newEnv(t, allowAll, audit.Config{}, &memorySink{})
	c := e.client(t)
	testkit.CallTool(t, c, "up__echo", map[string]any{"text": "hi", "big": json.Number("12345678901234567890"), "nested": map[string]any{"z": 1, "a": []any{true, nil}}})
	want := `{"big":12345678901234567890,"nested":{"a":[true,null],"z":1},"text":"hi"}`
	if got := e.rec.Arguments(); len(got) != 1 || got[0] != want {
		t.Errorf("upstream got arguments %q, want %q", got, want)
	}
}

func TestResultIsReturnedUnchanged(t *testing.T) {
	t.Parallel()
	e := newEnv(t, allowAll, audit.Config{}, &memorySink{})
	c := e.client(t)
	direct, err := e.pool.Call(t.Context(), "up", nil, mcp.CallToolParams{Name: "rich"})
	if err != nil {
		t.Fatal(err)
	}
	proxied := testkit.CallTool(t, c, "up__rich", nil)
	want, got := normalJSON(t, direct), normalJSON(t, proxied)
	if got != want {
		t.Errorf("result through the proxy:\n got %s\nwant %s", got, want)
	}
	for _, part := range []string{`"trace":"t-1"`, `"isError":true`, `"priority":0.5`, `"mimeType":"image/png"`, `"structuredContent":{"n":12345678901234567890`} {
		if !strings.Contains(got, part) {
			t.Errorf("result through the proxy lacks %s: %s", part, got)
		}
	}
}

// normalJSON is v as JSON with object keys sorted and numbers as written,
// without the envelope fields each side's protocol version adds on its own
// (resultType, io.modelcontextprotocol/ keys in _meta).
func normalJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	delete(m, "resultType")
	if meta, ok := m["_meta"].(map[string]any); ok {
		for k := range meta {
			if strings.HasPrefix(k, "io.modelcontextprotocol/") {
				delete(meta, k)
			}
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func TestDenyNamesTheRuleAndDoesNotForward(t *testing.T) {
	t.Parallel()
	sink := &memorySink{}
	e := newEnv(t, rules.PolicySpec{Deny: []string{"mcp:up:write:path=/etc/**"}, Allow: []string{"mcp:up:*"}}, audit.Config{}, sink)
	c := e.client(t)
	res := testkit.CallTool(t, c, "up__write", map[string]any{"path": "/etc/passwd"})
	text := res.Content[0].(mcp.TextContent).Text
	if !res.IsError || !strings.Contains(text, "mcp:up:write") || !strings.Contains(text, "mcp:up:write:path=/etc/**") {
		t.Errorf("deny result = %q (isError %v), want isError naming tool and rule", text, res.IsError)
	}
	if n := len(e.rec.Arguments()); n != 0 {
		t.Errorf("upstream was called %d times for a denied call", n)
	}
	events := sink.events(t)
	if len(events) != 1 || events[0].Event != audit.KindDecision || events[0].Decision != "deny" || events[0].Rule != "mcp:up:write:path=/etc/**" {
		t.Errorf("audit = %+v, want one deny decision naming the rule", events)
	}
	if events[0].Client == nil || events[0].Client.Name != "unit" {
		t.Errorf("audit client = %+v, want the name from initialize", events[0].Client)
	}
}

func TestRequiredAuditFailureFailsClosed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		required  bool
		wantCalls int
	}{
		{"with audit required the call is refused", true, 0},
		{"with audit not required the call goes through", false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, allowAll, audit.Config{Required: tt.required}, &memorySink{fail: true})
			c := e.client(t)
			res := testkit.CallTool(t, c, "up__echo", map[string]any{"text": "x"})
			if got := len(e.rec.Arguments()); got != tt.wantCalls {
				t.Errorf("upstream called %d times, want %d", got, tt.wantCalls)
			}
			if tt.required && (!res.IsError || !strings.Contains(res.Content[0].(mcp.TextContent).Text, "audit")) {
				t.Errorf("refusal %+v does not say the audit log failed", res)
			}
		})
	}
}

// stdioPipes serves srv over stdio on pipes until the test ends, and
// returns the client's ends.
func stdioPipes(t *testing.T, srv *Server) (in io.WriteCloser, out io.Reader) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- ServeStdio(ctx, srv, inR, outW) }()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		outR.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("ServeStdio did not return")
		}
	})
	return inW, outR
}

// rawSession drives the proxy over stdio with hand-written JSON-RPC lines,
// for requests a well-behaved client library would never send.
func rawSession(t *testing.T, srv *Server) (send func(line string) map[string]any) {
	t.Helper()
	inW, outR := stdioPipes(t, srv)
	lines := bufio.NewScanner(outR)
	send = func(line string) map[string]any {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(line, `"id"`) {
			return nil
		}
		if !lines.Scan() {
			t.Fatalf("no response to %s", line)
		}
		var m map[string]any
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			t.Fatalf("response %q: %v", lines.Text(), err)
		}
		return m
	}
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return send
}

func TestDuplicateKeysAreRefused(t *testing.T) {
	t.Parallel()
	sink := &memorySink{}
	e := newEnv(t, rules.PolicySpec{Deny: []string{"mcp:up:write:path=/etc/**"}, Allow: []string{"mcp:up:*"}}, audit.Config{}, sink)
	send := rawSession(t, e.srv)
	// A checker reading the first "path" and a server reading the last would
	// disagree; the proxy must refuse instead of picking one.
	resp := send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__write","arguments":{"path":"/tmp/ok","path":"/etc/passwd"}}}`)
	result, _ := resp["result"].(map[string]any)
	if result == nil || result["isError"] != true || !strings.Contains(mustJSON(t, result), "duplicate key") {
		t.Fatalf("response = %v, want an isError result about the duplicate key", resp)
	}
	if n := len(e.rec.Arguments()); n != 0 {
		t.Errorf("upstream was called %d times", n)
	}
	if ev := sink.events(t); len(ev) != 1 || ev[0].Decision != "deny" || ev[0].Error == "" {
		t.Errorf("audit = %+v, want one deny with the parse error", ev)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// adopt exposes the tools and catalog of every upstream already up, as
// New did before it stopped doing I/O: for tests that start their
// upstreams before the proxy. Unlike UpstreamChanged it audits no change.
func adopt(t testing.TB, s *Server) {
	t.Helper()
	for _, name := range s.upstream.Names() {
		listed, err := s.upstream.Tools(name)
		if err != nil {
			continue // it has no tools to show
		}
		s.review.check(t.Context(), name, listed)
		if _, _, _, err := s.tools.set(name, listed); err != nil {
			t.Fatal(err)
		}
		s.catalog.refresh(t.Context(), name)
	}
}
