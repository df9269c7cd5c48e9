package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// A sessionCall is one request of a recorded session: the tool as the
// client calls it (<server>__<tool>) and its arguments.
type sessionCall struct {
	tool string
	args map[string]any
}

// canonical is the call's canonical name, mcp:<server>:<tool>.
func (c sessionCall) canonical() string {
	server, tool, _ := strings.Cut(c.tool, "__")
	return "mcp:" + server + ":" + tool
}

// A policyCase is one case of a case file the test writes for mcpwarden
// test: a request and the decision it must get.
type policyCase struct {
	name   string
	tool   string // canonical
	args   map[string]any
	expect string
	rule   string // "" for any
}

// jsonText is v as JSON, which YAML reads as it is.
func jsonText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// writeCases writes cases as a case file at path, names, arguments and
// rules as JSON.
func writeCases(t *testing.T, path string, cases []policyCase) {
	t.Helper()
	js := func(v any) string { return jsonText(t, v) }
	var b strings.Builder
	b.WriteString("cases:\n")
	for _, c := range cases {
		fmt.Fprintf(&b, "  - name: %s\n    tool: %s\n    arguments: %s\n    expect: %s\n", js(c.name), js(c.tool), js(c.args), c.expect)
		if c.rule != "" {
			fmt.Fprintf(&b, "    rule: %s\n", js(c.rule))
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

// runCLIStatus runs mcpwarden with args and returns its combined output
// and exit status; a command that cannot be run fails the test.
func runCLIStatus(t *testing.T, args ...string) (string, int) {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), binary, args...).CombinedOutput()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	case err != nil:
		t.Fatalf("mcpwarden %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), 0
}

// suggestion is the part of policy suggest --json the test reads.
type suggestion struct {
	Allowed int `json:"already_allowed"`
	Allow   []struct {
		Rule             string   `json:"rule"`
		Count            int      `json:"count"`
		OutsideWorkspace []string `json:"outside_workspace"`
	} `json:"allow"`
}

// diffResult is the part of policy diff --json the test reads.
type diffResult struct {
	Changed int `json:"changed"`
	Widened int `json:"widened"`
	Groups  []struct {
		Decision string `json:"decision"`
		Rule     string `json:"rule"`
		Widened  bool   `json:"widened"`
	} `json:"groups"`
}

// pastedUnderAllow is the allow list of a policy suggest fragment, its
// comments and all, indented to go under a config's policy.allow (which
// is indented by two).
func pastedUnderAllow(t *testing.T, fragment string) string {
	t.Helper()
	_, list, ok := strings.Cut(fragment, "\nallow:\n")
	if !ok {
		t.Fatalf("policy suggest wrote no allow list:\n%s", fragment)
	}
	list, _, _ = strings.Cut(list, "\n\n") // the comments on what was not suggested
	var b strings.Builder
	for l := range strings.SplitSeq(strings.TrimRight(list, "\n"), "\n") {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}

// TestShadowSessionToSuggestedPolicyToPassingTests is issue 38's
// walkthrough end to end, with a real client and the reference filesystem
// server (and goserver's fetch, through the sandbox's egress proxy):
// a session recorded in shadow mode under a starting policy (default ask,
// a deny rule on a secrets folder), whose log verifies; policy suggest on
// that log, whose fragment, pasted into the config and enforced, loads
// without warnings, names nothing outside the workspace and never allows
// the write the deny rule refused; mcpwarden test cases written here that
// every recorded call is allowed and its neighbours (a sibling folder, the
// workspace's parent, the secrets folder, another host, scheme and port)
// are not; policy diff from the starting policy lists
// exactly the widened decisions; and the same policy served enforces it.
func TestShadowSessionToSuggestedPolicyToPassingTests(t *testing.T) {
	t.Parallel()
	port := testkit.OutsideHost(t)
	f := newFixture(t, "stdio",
		"  fs:\n"+serverFilesystem("SANDBOX")+"\n    cwd: SANDBOX\n    policy:\n      workspace: [SANDBOX]\n      outside_workspace: deny\n"+
			fmt.Sprintf("  go:\n    command: %q", goServer.binary(t)),
		fmt.Sprintf(`  default: ask
  deny:
    - "mcp:fs:write_file:path=SANDBOX/project/secrets/**"
  allow:
    - "mcp:fs:list_allowed_directories"
    - "mcp:go:network/connect:host=127.0.0.1:port=%d"`, port))
	starting, err := os.ReadFile(f.config)
	if err != nil {
		t.Fatal(err)
	}
	f.appendConfig(t, "enforce: shadow\n")
	project := filepath.Join(f.sandbox, "project")
	for _, dir := range []string{"src", "docs", "secrets"} {
		if err := os.MkdirAll(filepath.Join(project, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(project, "docs", "guide.md"), []byte("# Guide\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(f.dir, "outside.txt") // the workspace's parent
	page := fmt.Sprintf("http://127.0.0.1:%d/page", port)

	// The session: one call the starting policy allows and what it asks
	// about, then two calls it would refuse (all forwarded in shadow mode).
	session := []sessionCall{
		{"fs__list_allowed_directories", map[string]any{}},
		{"fs__write_file", map[string]any{"path": filepath.Join(project, "notes.md"), "content": "notes"}},
		{"fs__write_file", map[string]any{"path": filepath.Join(project, "src", "main.go"), "content": "package main\n"}},
		{"fs__read_text_file", map[string]any{"path": filepath.Join(project, "notes.md")}},
		{"fs__read_text_file", map[string]any{"path": filepath.Join(project, "docs", "guide.md")}},
		{"fs__list_directory", map[string]any{"path": project}},
		{"go__fetch", map[string]any{"url": page}},
	}
	refusedWrite := sessionCall{"fs__write_file", map[string]any{"path": filepath.Join(project, "secrets", "token.txt"), "content": "s3cret"}}
	outsideRead := sessionCall{"fs__read_text_file", map[string]any{"path": outside}}
	c := connectStdio(t, f, client.WithElicitationHandler(&human{answer: says("deny")}))
	for _, call := range append(slices.Clone(session), refusedWrite, outsideRead) {
		res := callTool(t, c, call.tool, call.args)
		if res.IsError && call.args["path"] != outside { // the server itself refuses a path outside its directory
			t.Fatalf("%s %v in shadow mode: %v", call.tool, call.args, res.Content)
		}
		if got := testkit.Text(res); call.tool == "go__fetch" && !strings.Contains(got, "200 hello from outside") {
			t.Fatalf("the fetch in shadow mode: %q, want the page", got)
		}
	}
	if b, err := os.ReadFile(filepath.Join(project, "secrets", "token.txt")); err != nil || string(b) != "s3cret" {
		t.Errorf("the write a deny rule refuses, in shadow mode: %q, %v; want it made", b, err)
	}
	// The fetch's connection, decided by the egress proxy, is a recorded
	// request of its own, allowed by the starting policy: a loopback
	// address is dialled only when a rule names it literally.
	session = append(session, sessionCall{"go__network/connect", map[string]any{"host": "127.0.0.1", "port": port}})
	c.Close()
	if out := runCLI(t, "audit", "verify", f.auditPath); !strings.HasPrefix(out, "ok:") {
		t.Errorf("audit verify of the shadow-mode log: %s", out)
	}

	// policy suggest, as a fragment to paste and as JSON to check.
	fragment := runCLI(t, "policy", "suggest", "--config", f.config, f.auditPath)
	var sug suggestion
	if err := json.Unmarshal([]byte(runCLI(t, "policy", "suggest", "--config", f.config, "--json", f.auditPath)), &sug); err != nil {
		t.Fatal(err)
	}
	var suggested []string
	covered := 0
	for _, r := range sug.Allow {
		suggested = append(suggested, r.Rule)
		covered += r.Count
		if len(r.OutsideWorkspace) > 0 {
			t.Errorf("the suggested rule %s names paths outside the workspace: %q", r.Rule, r.OutsideWorkspace)
		}
		if _, paths, ok := strings.Cut(r.Rule, ":path="); ok && !strings.HasPrefix(strings.TrimPrefix(paths, "{"), project+"/") && paths != project {
			t.Errorf("the suggested rule %s names paths beyond the project folder the session used", r.Rule)
		}
	}
	if want := len(session) - 2; covered != want || sug.Allowed != 2 { // all but the two a rule allows already
		t.Errorf("the suggested rules cover %d requests (%d already allowed), want the %d the starting policy asked about (2):\n%s", covered, sug.Allowed, want, fragment)
	}
	if !strings.Contains(fragment, "refused by a deny rule (mcp:fs:write_file:path="+project+"/secrets/**)") {
		t.Errorf("the fragment does not list the refused write as not suggested:\n%s", fragment)
	}
	if !strings.Contains(fragment, outside) {
		t.Errorf("the fragment does not list the read outside the workspace as not suggested:\n%s", fragment)
	}

	// The fragment pasted into the config, enforced, with a log of its own.
	enforced := filepath.Join(f.dir, "enforced.yaml")
	anchor := "    - \"mcp:fs:list_allowed_directories\"\n"
	cfg := strings.Replace(string(starting), anchor, anchor+pastedUnderAllow(t, fragment), 1)
	cfg = strings.Replace(cfg, f.auditPath, filepath.Join(f.dir, "enforced-audit.jsonl"), 1)
	if err := os.WriteFile(enforced, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, code := runCLIStatus(t, "validate", "--offline", "--strict", "--config", enforced); code != 0 || strings.Contains(strings.ToLower(out), "warn") {
		t.Errorf("validate --offline --strict of the config with the suggestion pasted exited %d:\n%s\nthe config:\n%s", code, out, cfg)
	}

	// The cases: every recorded call allowed, by a suggested rule or the
	// one already there; the neighbours not.
	var cases []policyCase
	for _, call := range session {
		cases = append(cases, policyCase{name: "recorded: " + call.canonical() + " " + jsonText(t, call.args), tool: call.canonical(), args: call.args, expect: "allow"})
	}
	cases = append(cases,
		policyCase{name: "the refused write stays denied", tool: refusedWrite.canonical(), args: refusedWrite.args, expect: "deny", rule: "mcp:fs:write_file:path=" + project + "/secrets/**"},
		policyCase{name: "the read outside the workspace stays denied", tool: outsideRead.canonical(), args: outsideRead.args, expect: "deny", rule: "outside_workspace"},
		policyCase{name: "a read in a sibling folder of the project asks", tool: "mcp:fs:read_text_file", args: map[string]any{"path": filepath.Join(f.sandbox, "other", "notes.md")}, expect: "ask", rule: "default"},
		policyCase{name: "a listing of the workspace above the project asks", tool: "mcp:fs:list_directory", args: map[string]any{"path": f.sandbox}, expect: "ask"},
		policyCase{name: "a write in the project's secrets stays denied", tool: "mcp:fs:write_file", args: map[string]any{"path": filepath.Join(project, "secrets", "other.txt"), "content": "x"}, expect: "deny"},
		policyCase{name: "a write in a sibling folder of the project asks", tool: "mcp:fs:write_file", args: map[string]any{"path": filepath.Join(f.sandbox, "other", "notes.md"), "content": "x"}, expect: "ask"},
		policyCase{name: "a fetch of another host asks", tool: "mcp:go:fetch", args: map[string]any{"url": fmt.Sprintf("http://127.0.0.2:%d/page", port)}, expect: "ask"},
		policyCase{name: "a fetch of a longer host asks", tool: "mcp:go:fetch", args: map[string]any{"url": "http://127.0.0.1.evil.example/page"}, expect: "ask"},
		policyCase{name: "a fetch over another scheme asks", tool: "mcp:go:fetch", args: map[string]any{"url": fmt.Sprintf("https://127.0.0.1:%d/page", port)}, expect: "ask"},
		policyCase{name: "a connection to another loopback port is denied", tool: "mcp:go:network/connect", args: map[string]any{"host": "127.0.0.1", "port": port + 1}, expect: "deny"},
		policyCase{name: "a connection to another loopback host is denied", tool: "mcp:go:network/connect", args: map[string]any{"host": "127.0.0.2", "port": port}, expect: "deny"},
		policyCase{name: "a connection to a public host asks", tool: "mcp:go:network/connect", args: map[string]any{"host": "93.184.215.14", "port": 443}, expect: "ask", rule: "default"},
	)
	casesPath := filepath.Join(f.dir, "enforced.cases.yaml")
	writeCases(t, casesPath, cases)
	if out, code := runCLIStatus(t, "test", "--config", enforced, casesPath); code != 0 {
		t.Errorf("mcpwarden test of the suggested policy exited %d:\n%s\nthe config:\n%s", code, out, cfg)
	}

	// policy diff: exactly the recorded requests the suggestion covers
	// widen, each by a suggested rule; nothing else changes.
	out, code := runCLIStatus(t, "policy", "diff", "--json", "--config", f.config, "--against", enforced, f.auditPath)
	var diff diffResult
	if err := json.Unmarshal([]byte(out), &diff); code != 1 || err != nil {
		t.Fatalf("policy diff exited %d (%v), want 1 (decisions change):\n%s", code, err, out)
	}
	if diff.Changed != covered || diff.Widened != covered {
		t.Errorf("policy diff: %d changed, %d widened; want exactly the %d requests the suggestion covers", diff.Changed, diff.Widened, covered)
	}
	var diffRules []string
	for _, g := range diff.Groups {
		diffRules = append(diffRules, g.Rule)
		if !g.Widened || g.Decision != "allow" {
			t.Errorf("policy diff group %+v, want every change a widening to allow", g)
		}
	}
	slices.Sort(diffRules)
	if !slices.Equal(diffRules, suggested) {
		t.Errorf("policy diff's rules %q, want the suggested %q", diffRules, suggested)
	}

	// The same policy served: a recorded call passes, a neighbour is asked
	// about and refused.
	g := *f
	g.config = enforced
	h := &human{answer: says("deny")}
	c = connectStdio(t, &g, client.WithElicitationHandler(h))
	if res := callTool(t, c, "fs__read_text_file", map[string]any{"path": filepath.Join(project, "docs", "guide.md")}); res.IsError {
		t.Errorf("a recorded read under the suggested policy, enforced: %v", res.Content)
	}
	neighbour := filepath.Join(f.sandbox, "other.md")
	if res := callTool(t, c, "fs__write_file", map[string]any{"path": neighbour, "content": "x"}); !res.IsError {
		t.Errorf("a neighbour of the recorded writes, asked about and refused, was made: %v", res.Content)
	}
	if n := h.times(); n != 1 {
		t.Errorf("the client was asked %d times, want once (the neighbour)", n)
	}
	if _, err := os.Stat(neighbour); err == nil {
		t.Errorf("the refused neighbour's file exists")
	}
}
