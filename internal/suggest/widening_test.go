package suggest_test

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/recorded"
	"github.com/mcpwarden/mcpwarden/internal/suggest"
	"github.com/mcpwarden/mcpwarden/rules"
)

// The attacks on suggest: a rule wider than what was recorded, above the
// workspace, or naming a recorded value as a glob.

// TestClimbingOutOfTheWorkspaceIsNotGeneralised: a path that climbs out
// with `..`, and one in a sibling whose name starts with the workspace's,
// are outside it: named exactly and flagged, never generalised with the
// paths inside.
func TestClimbingOutOfTheWorkspaceIsNotGeneralised(t *testing.T) {
	t.Parallel()
	st, ws := setup(t)
	dir := filepath.Dir(ws)
	reqs := []recorded.Request{
		asked("mcp:fs:read_file", `{"path":"`+ws+`/a/x"}`),
		asked("mcp:fs:read_file", `{"path":"`+ws+`/a/../../up"}`),
		asked("mcp:fs:read_file", `{"path":"`+ws+`2/y"}`),
		asked("mcp:fs:read_file", `{"path":"`+ws+`/a/y"}`),
	}
	res, err := suggest.Suggest(reqs, st.Suggesting())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"mcp:fs:read_file:path=" + dir + "/up", "mcp:fs:read_file:path=" + ws + "/a/**", "mcp:fs:read_file:path=" + ws + "2/y"}
	if diff := cmp.Diff(want, res.Rules()); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
	var outside []string
	for _, r := range res.Allow {
		outside = append(outside, r.OutsideWorkspace...)
	}
	if diff := cmp.Diff([]string{dir + "/up", ws + "2/y"}, outside); diff != "" {
		t.Errorf("flagged outside (-want +got):\n%s", diff)
	}
}

// TestToolNamedLikeAGlobIsNamedLiterally: an upstream's tool named "*"
// or "read_{a,b}" (a tool name is the upstream's to choose) is named
// literally, never as a glob covering the server's other tools.
func TestToolNamedLikeAGlobIsNamedLiterally(t *testing.T) {
	t.Parallel()
	st, _ := setup(t)
	reqs := []recorded.Request{asked("mcp:web:*", `{}`), asked("mcp:web:read_{a,b}", `{}`)}
	res, err := suggest.Suggest(reqs, st.Suggesting())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{`mcp:web:\*`, `mcp:web:read_\{a\,b\}`}, res.Rules()); diff != "" {
		t.Fatalf("rules (-want +got):\n%s", diff)
	}
	next, err := st.WithAllow(res.Rules())
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"delete_everything", "read_a"} {
		if v := next.Decide(rules.Call{Server: "web", Tool: tool}, false).Verdict; v.Decision == rules.Allow {
			t.Errorf("mcp:web:%s is allowed by %s with the suggested rules", tool, v.Rule)
		}
	}
}

// TestRequestsNoRuleCanNameAreNotSuggested: a server the config does not
// have, or whose name is a glob, and an argument key a rule cannot spell,
// are reported, never turned into a rule (nor into an error).
func TestRequestsNoRuleCanNameAreNotSuggested(t *testing.T) {
	t.Parallel()
	st, ws := setup(t)
	reqs := []recorded.Request{
		asked("mcp:gone:read_file", `{"path":"`+ws+`/a"}`),
		asked("mcp:*:read_file", `{"path":"`+ws+`/a"}`),
		asked("mcp:fs:read_file", `{"ſource":"`+ws+`/a"}`),
		asked("mcp:fs:read_file", `{"opts":{"a=b:c":{"path":"`+ws+`/a"}}}`),
	}
	res, err := suggest.Suggest(reqs, st.Suggesting())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Allow) != 0 || len(res.NotSuggested) != 4 {
		t.Errorf("rules %q, not suggested %q; want none, and 4 reasons", res.Rules(), whys(res))
	}
}

// TestShadowDenyIsNeverSuggested: in shadow mode a request a deny rule
// would have refused was forwarded all the same; it is still a deny, and
// is not suggested.
func TestShadowDenyIsNeverSuggested(t *testing.T) {
	t.Parallel()
	st, _ := setup(t)
	shadowDeny := asked("mcp:web:fetch", `{"url":"https://evil.example/x"}`)
	shadowDeny.Decision, shadowDeny.Rule, shadowDeny.GrantedBy, shadowDeny.Outcome, shadowDeny.Shadow = audit.DecisionDeny, "mcp:web:fetch:url.host=evil.example", audit.GrantedByShadow, audit.OutcomeNone, true
	res, err := suggest.Suggest([]recorded.Request{shadowDeny, asked("mcp:web:fetch", `{"url":"https://go.dev/"}`)}, st.Suggesting())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"mcp:web:fetch:url.host=go.dev:url.scheme=https"}, res.Rules()); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"refused by a deny rule (mcp:web:fetch:url.host=evil.example); not suggested"}, whys(res)); diff != "" {
		t.Errorf("not suggested (-want +got):\n%s", diff)
	}
}

// TestCaseFoldedPathsNeverGeneraliseAboveTheWorkspace: where paths compare
// case-insensitively, two spellings of the workspace are both inside it,
// and their common folder is the workspace, never the folder above it.
func TestCaseFoldedPathsNeverGeneraliseAboveTheWorkspace(t *testing.T) {
	t.Parallel()
	st, ws := setupWith(t, "paths_case_insensitive: true\n")
	dir := filepath.Dir(ws)
	reqs := []recorded.Request{
		asked("mcp:fs:read_file", `{"path":"`+dir+`/WS/a/x"}`),
		asked("mcp:fs:read_file", `{"path":"`+ws+`/b/y"}`),
	}
	res, err := suggest.Suggest(reqs, st.Suggesting())
	if err != nil {
		t.Fatal(err)
	}
	next, err := st.WithAllow(res.Rules())
	if err != nil {
		t.Fatal(err)
	}
	c := rules.Call{Server: "fs", Tool: "read_file", Arguments: map[string]any{"path": dir + "/elsewhere"}}
	if v := next.Decide(c, false).Verdict; v.Decision == rules.Allow {
		t.Errorf("%s is allowed by %s: the rules %q widen above the workspace", dir+"/elsewhere", v.Rule, res.Rules())
	}
}

// TestOnePathIsNamedExactlyWhateverItsForms: a single path recorded in
// decomposed Unicode has two forms (NFD and NFC); it is still one path,
// named exactly, not generalised to its folder.
func TestOnePathIsNamedExactlyWhateverItsForms(t *testing.T) {
	t.Parallel()
	st, ws := setup(t)
	res, err := suggest.Suggest([]recorded.Request{asked("mcp:fs:read_file", `{"path":"`+ws+`/src/cafe\u0301.txt"}`)}, st.Suggesting())
	if err != nil {
		t.Fatal(err)
	}
	next, err := st.WithAllow(res.Rules())
	if err != nil {
		t.Fatal(err)
	}
	c := rules.Call{Server: "fs", Tool: "read_file", Arguments: map[string]any{"path": ws + "/src/other.txt"}}
	if v := next.Decide(c, false).Verdict; v.Decision == rules.Allow {
		t.Errorf("a sibling of the one recorded file is allowed by %s", v.Rule)
	}
}

// TestPathInAnArrayOfObjectsIsStillNamed: a path under a key no rule
// condition reaches (in an array of objects) is still covered, by @path,
// so the rule does not allow any path there, on a server with no
// workspace to fence it either.
func TestPathInAnArrayOfObjectsIsStillNamed(t *testing.T) {
	t.Parallel()
	st, _ := setupYAML(t, "servers:\n  web: { command: /bin/true }\npolicy: { default: ask }\naudit: { sink: none }\n")
	res, err := suggest.Suggest([]recorded.Request{asked("mcp:web:batch", `{"ops":[{"path":"/srv/data/a"}]}`)}, st.Suggesting())
	if err != nil {
		t.Fatal(err)
	}
	next, err := st.WithAllow(res.Rules())
	if err != nil {
		t.Fatal(err)
	}
	c := rules.Call{Server: "web", Tool: "batch", Arguments: map[string]any{"ops": []any{map[string]any{"path": "/etc/shadow"}}}}
	if v := next.Decide(c, false).Verdict; v.Decision == rules.Allow {
		t.Errorf("/etc/shadow in an array of objects is allowed by %s (rules %q)", v.Rule, res.Rules())
	}
}

// TestURLsAndCommandsInArraysOfObjectsAreNamed: URLs and commands in an
// array of objects are named through the array (arrays are transparent
// to a rule's key), and one no key can reach (an array in an array) stops
// the suggestion instead of being left unconstrained.
func TestURLsAndCommandsInArraysOfObjectsAreNamed(t *testing.T) {
	t.Parallel()
	st, _ := setup(t)
	reqs := []recorded.Request{
		asked("mcp:web:fetch_all", `{"requests":[{"url":"https://a.example/x"},{"url":"https://b.example/y"}]}`),
		asked("mcp:web:run_all", `{"steps":[{"command":"make"},{"command":"make test"}]}`),
		asked("mcp:web:deep", `{"batches":[[{"url":"https://a.example/"}]]}`),
		asked("mcp:web:odd", `{"url":{"href":"https://a.example/"}}`),
	}
	res, err := suggest.Suggest(reqs, st.Suggesting())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"mcp:web:fetch_all:requests.url.host={a.example,b.example}:requests.url.scheme=https",
		"mcp:web:run_all:steps.command={make,make test}",
	}
	if diff := cmp.Diff(want, res.Rules()); diff != "" {
		t.Errorf("rules (-want +got):\n%s\nnot suggested: %q", diff, whys(res))
	}
	next, err := st.WithAllow(res.Rules())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []rules.Call{
		{Server: "web", Tool: "fetch_all", Arguments: map[string]any{"requests": []any{map[string]any{"url": "https://a.example/"}, map[string]any{"url": "https://evil.example/"}}}},
		{Server: "web", Tool: "run_all", Arguments: map[string]any{"steps": []any{map[string]any{"command": "make; curl evil.example"}}}},
		{Server: "web", Tool: "deep", Arguments: map[string]any{"batches": []any{[]any{map[string]any{"url": "https://evil.example/"}}}}},
		{Server: "web", Tool: "odd", Arguments: map[string]any{"url": map[string]any{"href": "https://evil.example/"}}},
	} {
		if v := next.Decide(c, false).Verdict; v.Decision == rules.Allow {
			t.Errorf("mcp:web:%s %v is allowed by %s", c.Tool, c.Arguments, v.Rule)
		}
	}
}
