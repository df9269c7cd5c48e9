package proxy

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/rules"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// A laxEnv is a proxy in front of a laxUpstream, "py", whose root is a
// workspace ws; outside holds secret.txt, ws holds .env and notes.txt. The
// policy confines paths to ws (outside_workspace: deny), denies
// `@path=**/.env`, a forced delete and reads of 7 digits of bytes, and
// allows the rest of py.
type laxEnv struct {
	up          *laxUpstream
	srv         *Server
	sink        *memorySink
	pool        *upstream.Pool
	c           *client.Client
	ws, outside string
}

func newLaxEnv(t *testing.T, fold bool) *laxEnv {
	t.Helper()
	up := newLaxUpstream(fold)
	pool := upstream.Start(t.Context(), map[string]upstream.Spec{
		"py": {Transport: upstream.TransportHTTP, URL: up.rec.URL(t)},
	}, nil)
	t.Cleanup(func() { pool.Close() })
	if err := pool.Err("py"); err != nil {
		t.Fatal(err)
	}
	ws, outside := t.TempDir(), t.TempDir()
	for _, f := range []string{filepath.Join(outside, "secret.txt"), filepath.Join(ws, ".env"), filepath.Join(ws, "notes.txt")} {
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p, err := rules.Compile(rules.Spec{
		Global: rules.PolicySpec{
			Deny:             []string{"mcp:*:*:@path=**/.env", "mcp:py:delete_file:force=true", "mcp:py:read_file:max_bytes~=[0-9]{7,}"},
			Allow:            []string{"mcp:py:*"},
			Workspace:        []string{ws},
			OutsideWorkspace: "deny",
		},
		Servers: map[string]rules.ServerSpec{"py": {Root: ws}},
	})
	if err != nil {
		t.Fatal(err)
	}
	sink := &memorySink{}
	srv, err := New(Options{Upstream: pool, Policy: p, Audit: audit.New(sink, audit.Config{})})
	if err != nil {
		t.Fatal(err)
	}
	adopt(t, srv)
	return &laxEnv{up: up, srv: srv, sink: sink, pool: pool, c: testkit.Connect(t, srv.MCP(), ""), ws: ws, outside: outside}
}

// rulesAlone is the rules' decision on a call of tool with args, as if no
// type were checked: what the attack met before the check.
func (e *laxEnv) rulesAlone(t *testing.T, tool string, args map[string]any) rules.Decision {
	t.Helper()
	tl, ok := e.srv.Lookup("py__" + tool)
	if !ok {
		t.Fatalf("no tool py__%s", tool)
	}
	c := e.srv.newCall(t.Context(), tl, mcp.CallToolRequest{Params: mcp.CallToolParams{Arguments: args}})
	if c.argsErr != nil {
		t.Fatal(c.argsErr)
	}
	return e.srv.decide(t.Context(), c).Decision
}

// direct calls the stand-in past the proxy and returns what it opened.
func (e *laxEnv) direct(t *testing.T, tool string, args map[string]any) []string {
	t.Helper()
	before := len(e.up.log())
	if _, err := e.pool.Call(t.Context(), "py", nil, mcp.CallToolParams{Name: tool, Arguments: args}); err != nil {
		t.Fatal(err)
	}
	return e.up.log()[before:]
}

// attack checks that a call of tool with args is one the rules alone allow
// and the stand-in, called directly, reads as opening want (the attack is
// real), and that through the proxy it is refused with an error holding
// refusal, audited as a deny for the argument's type, and never reaches
// the stand-in.
func (e *laxEnv) attack(t *testing.T, tool string, args map[string]any, want, refusal string) {
	t.Helper()
	if d := e.rulesAlone(t, tool, args); d != rules.Allow {
		t.Fatalf("the rules alone decide %v, so this is no attack on the type check", d)
	}
	if want != "" {
		if got := e.direct(t, tool, args); len(got) != 1 || got[0] != want {
			t.Fatalf("the stand-in called directly opened %q, want %q: it does not read the value as the test says", got, want)
		}
	}
	calls, opened := len(e.up.rec.Calls()), len(e.up.log())
	res := testkit.CallTool(t, e.c, "py__"+tool, args)
	if got := e.up.log()[opened:]; len(got) > 0 {
		t.Errorf("through the proxy the upstream opened %q", got)
	}
	if got := e.up.rec.Calls()[calls:]; len(got) > 0 {
		t.Errorf("the upstream got %d calls, want none", len(got))
	}
	text := testkit.Text(res)
	if !res.IsError || !strings.Contains(text, refusal) || !strings.HasPrefix(text, "mcpwarden refused mcp:py:"+tool+": ") {
		t.Errorf("result = %q (isError %v), want a refusal holding %q", text, res.IsError, refusal)
	}
	evs := e.sink.events(t)
	last := evs[len(evs)-1]
	if last.Event != audit.KindDecision || last.Decision != "deny" || last.Reason != reasonArgTypes || !strings.Contains(last.Error, refusal) {
		t.Errorf("audit event = %+v, want a deny with reason %q and the error", last, reasonArgTypes)
	}
}

func TestJSONArraySentAsTextDoesNotPassWorkspaceConfinement(t *testing.T) {
	t.Parallel()
	e := newLaxEnv(t, false)
	secret := filepath.Join(e.outside, "secret.txt")
	// The rules confine a real array: the same path as a list is denied.
	if d := e.rulesAlone(t, "read_multiple_files", map[string]any{"paths": []any{secret}}); d != rules.Deny {
		t.Fatalf("the rules decide %v on the path outside the workspace, want deny", d)
	}
	e.attack(t, "read_multiple_files", map[string]any{"paths": `["` + secret + `"]`}, "read "+secret,
		`argument "paths" is a string, but the tool declares an array; send a JSON array`)
}

func TestJSONArraySentAsTextDoesNotPassADotEnvDeny(t *testing.T) {
	t.Parallel()
	e := newLaxEnv(t, false)
	env := filepath.Join(e.ws, ".env")
	e.attack(t, "read_multiple_files", map[string]any{"paths": `[".env", "` + env + `"]`}, "",
		`argument "paths" is a string, but the tool declares an array`)
}

func TestBooleanSentAsYesDoesNotPassAForceDeny(t *testing.T) {
	t.Parallel()
	e := newLaxEnv(t, false)
	notes := filepath.Join(e.ws, "notes.txt")
	for _, yes := range []string{"yes", "on", "1", "t", "y", "TRUE", "True"} {
		t.Run(yes, func(t *testing.T) {
			e.attack(t, "delete_file", map[string]any{"path": notes, "force": yes}, "deleted "+notes,
				`argument "force" is a string, but the tool declares a boolean; send true or false`)
		})
	}
	t.Run("the number 1", func(t *testing.T) {
		e.attack(t, "delete_file", map[string]any{"path": notes, "force": 1}, "deleted "+notes,
			`argument "force" is a number, but the tool declares a boolean; send true or false`)
	})
}

func TestObjectSentAsTextDoesNotPassADotEnvDeny(t *testing.T) {
	t.Parallel()
	e := newLaxEnv(t, false)
	env := filepath.Join(e.ws, ".env")
	e.attack(t, "write_file", map[string]any{"target": `{"path": "` + env + `"}`, "content": "A=1"}, "wrote "+env,
		`argument "target" is a string, but the tool declares an object; send a JSON object`)
}

func TestNumberSentAsTextDoesNotPassAMaxBytesDeny(t *testing.T) {
	t.Parallel()
	e := newLaxEnv(t, false)
	notes := filepath.Join(e.ws, "notes.txt")
	// `max_bytes~=[0-9]{7,}` holds for 99999999 and for "99999999";
	// pydantic reads " 99999999" as the same int, which the pattern misses.
	e.attack(t, "read_file", map[string]any{"path": notes, "max_bytes": " 99999999"}, "read "+notes+" max_bytes=99999999",
		`argument "max_bytes" is a string, but the tool declares an integer; send a JSON number with no fraction`)
}

func TestNestedListSentAsTextDoesNotPassWorkspaceConfinement(t *testing.T) {
	t.Parallel()
	e := newLaxEnv(t, false)
	secret := filepath.Join(e.outside, "secret.txt")
	// FastMCP pre-parses only top-level arguments, so this stand-in
	// refuses the nested text itself; a server that decodes it deeper
	// would read the file. The proxy must not rely on which it is.
	e.attack(t, "archive", map[string]any{"options": map[string]any{"paths": `["` + secret + `"]`}}, "",
		`argument "options.paths" is a string, but the tool declares an array; send a JSON array`)
	// The whole model as text: FastMCP pre-parses it, list and all.
	e.attack(t, "archive", map[string]any{"options": `{"paths": ["` + secret + `"]}`}, "read "+secret,
		`argument "options" is a string, but the tool declares an object; send a JSON object`)
}

func TestJSONArraySentAsTextForAnOptionalListDoesNotPassWorkspaceConfinement(t *testing.T) {
	t.Parallel()
	e := newLaxEnv(t, false)
	secret := filepath.Join(e.outside, "secret.txt")
	e.attack(t, "read_some", map[string]any{"paths": `["` + secret + `"]`}, "read "+secret,
		`argument "paths" is a string, but the tool declares an array or null; send a JSON array, or send null`)
}

func TestKeyDifferingInCaseDoesNotPassAForceDeny(t *testing.T) {
	t.Parallel()
	e := newLaxEnv(t, true) // binds FORCE to force, as a Go server does
	notes := filepath.Join(e.ws, "notes.txt")
	e.attack(t, "delete_file", map[string]any{"path": notes, "FORCE": "on"}, "deleted "+notes,
		`argument "FORCE" is a string, but the tool declares a boolean; send true or false`)
	e.attack(t, "delete_file", map[string]any{"path": notes, "For_ce": "Y"}, "deleted "+notes, `argument "For_ce" is a string`)
}

func TestArgumentsOfTheDeclaredTypesAreForwarded(t *testing.T) {
	t.Parallel()
	e := newLaxEnv(t, false)
	notes := filepath.Join(e.ws, "notes.txt")
	tests := []struct {
		name, tool string
		args       map[string]any
		want       string
	}{
		{"a list of paths inside the workspace", "read_multiple_files", map[string]any{"paths": []any{notes}}, "read " + notes},
		{"an optional list left null", "read_some", map[string]any{"paths": nil}, ""},
		{"an integer written 1.0e3, as pydantic accepts", "read_file", map[string]any{"path": notes, "max_bytes": json.Number("1.0e3")}, "read " + notes + " max_bytes=1000"},
		{"a nested model", "write_file", map[string]any{"target": map[string]any{"path": notes}, "content": "x"}, "wrote " + notes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(e.up.log())
			res := testkit.CallTool(t, e.c, "py__"+tt.tool, tt.args)
			if res.IsError {
				t.Fatalf("refused: %s", testkit.Text(res))
			}
			got := strings.Join(e.up.log()[before:], "\n")
			if got != tt.want {
				t.Errorf("the upstream opened %q, want %q", got, tt.want)
			}
		})
	}
}

// schemaEnv is a proxy in front of the stand-in "up" with one tool, t,
// listed with schema; its log is in the returned buffer.
func schemaEnv(t *testing.T, schema string) (*Server, *testkit.StandIn, *testkit.LockedBuffer) {
	t.Helper()
	rec := testkit.NewStandIn()
	rec.AddTool(mcp.NewToolWithRawSchema("t", "", json.RawMessage(schema)), testkit.Reply("ok"))
	pool := upstream.Start(t.Context(), map[string]upstream.Spec{"up": {Transport: upstream.TransportHTTP, URL: rec.URL(t)}}, nil)
	t.Cleanup(func() { pool.Close() })
	if err := pool.Err("up"); err != nil {
		t.Fatal(err)
	}
	p, err := rules.Compile(rules.Spec{Global: allowAll, Servers: map[string]rules.ServerSpec{"up": {}}})
	if err != nil {
		t.Fatal(err)
	}
	var log testkit.LockedBuffer
	srv, err := New(Options{Upstream: pool, Policy: p, Audit: audit.New(&memorySink{}, audit.Config{}), Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	adopt(t, srv)
	return srv, rec, &log
}

func TestUnusableSchemaIsLoggedOnceAndItsTopLevelTypesAreChecked(t *testing.T) {
	t.Parallel()
	srv, rec, log := schemaEnv(t, `{"type": "object", "properties": {"paths": {"type": "array"}, "o": {"$ref": "#/$defs/Missing"}}}`)
	tools, err := srv.upstream.Tools("up")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := srv.tools.set("up", tools); err != nil { // listed again, unchanged
		t.Fatal(err)
	}
	if n := strings.Count(log.String(), "cannot be used as written"); n != 1 {
		t.Errorf("the unusable schema was logged %d times, want once:\n%s", n, log)
	}
	c := testkit.Connect(t, srv.MCP(), "")
	if res := testkit.CallTool(t, c, "up__t", map[string]any{"paths": `["/etc/passwd"]`}); !res.IsError {
		t.Errorf("a string for a declared array was forwarded: %s", testkit.Text(res))
	}
	if res := testkit.CallTool(t, c, "up__t", map[string]any{"paths": []any{}, "o": "anything"}); res.IsError {
		t.Errorf("a value under the unusable $ref was refused: %s", testkit.Text(res))
	}
	if got := len(rec.Calls()); got != 1 {
		t.Errorf("the upstream got %d calls, want 1", got)
	}
}

func TestChangedSchemaIsCheckedAsListedAgain(t *testing.T) {
	t.Parallel()
	srv, _, _ := schemaEnv(t, `{"type": "object", "properties": {"paths": {"type": "string"}}}`)
	c := testkit.Connect(t, srv.MCP(), "")
	if res := testkit.CallTool(t, c, "up__t", map[string]any{"paths": []any{"a"}}); !res.IsError {
		t.Fatalf("an array for a declared string was forwarded: %s", testkit.Text(res))
	}
	def := mcp.NewToolWithRawSchema("t", "", json.RawMessage(`{"type": "object", "properties": {"paths": {"type": "array"}}}`))
	if _, _, changed, err := srv.tools.set("up", []mcp.Tool{def}); err != nil || len(changed) != 1 {
		t.Fatalf("setTools: changed %v, %v", changed, err)
	}
	if res := testkit.CallTool(t, c, "up__t", map[string]any{"paths": []any{"a"}}); res.IsError {
		t.Errorf("an array for the newly declared array was refused: %s", testkit.Text(res))
	}
	if res := testkit.CallTool(t, c, "up__t", map[string]any{"paths": "a"}); !res.IsError {
		t.Errorf("a string for the newly declared array was forwarded: %s", testkit.Text(res))
	}
}

// TestPromptArgumentSentAsAListDoesNotReachTheUpstream: prompts/get
// arguments are strings by the MCP spec (a prompt declares names, no
// types), and a list or object sent for one is refused before the
// prompt is decided; mcp-go's typed decode of the request refuses it, so
// the proxy has nothing else to check, and this test keeps it so.
func TestPromptArgumentSentAsAListDoesNotReachTheUpstream(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, allowAllServers, Options{})
	send, next := rawStdio(t, e.srv)
	initializeStdio(t, send, next, `{}`)
	for i, args := range []string{`{"who":["/etc/passwd"]}`, `{"who":{"a":1}}`, `{"who":1}`, `{"who":true}`, `{"WHO":["x"]}`} {
		send(`{"jsonrpc":"2.0","id":%d,"method":"prompts/get","params":{"name":"fs__greet","arguments":%s}}`, i, args)
		if m := next(); m["error"] == nil {
			t.Errorf("prompts/get with arguments %s answered %v, want an error", args, m)
		}
	}
	send(`{"jsonrpc":"2.0","id":"ok","method":"prompts/get","params":{"name":"fs__greet","arguments":{"who":"x"}}}`)
	if m := next(); m["result"] == nil {
		t.Fatalf("prompts/get with a string argument answered %v", m)
	}
	if n := e.fs.count(mcp.MethodPromptsGet); n != 1 {
		t.Errorf("the upstream got %d prompts/get, want only the one with a string", n)
	}
}

// TestTypeRefusalIsNotAdvisedAsAMissingAllowRule: a call refused for an
// argument's type names no rule, and the operator's log must not advise
// adding an allow rule, which would change nothing.
func TestTypeRefusalIsNotAdvisedAsAMissingAllowRule(t *testing.T) {
	t.Parallel()
	e := newLaxEnv(t, false)
	tl, ok := e.srv.Lookup("py__delete_file")
	if !ok {
		t.Fatal("no tool py__delete_file")
	}
	c := e.srv.newCall(t.Context(), tl, mcp.CallToolRequest{Params: mcp.CallToolParams{Arguments: map[string]any{"path": "x", "force": "yes"}}})
	e.srv.tools.mu.Lock()
	schema := e.srv.tools.schemas["py"]["delete_file"]
	e.srv.tools.mu.Unlock()
	c.checkTypes(schema)
	if c.argsErr == nil {
		t.Fatal("the mistyped call was not refused")
	}
	if got := howToAllow(c); strings.Contains(got, "policy.allow") || !strings.Contains(got, "declares") {
		t.Errorf("howToAllow = %q, want it to say the arguments' types, not an allow rule", got)
	}
}
