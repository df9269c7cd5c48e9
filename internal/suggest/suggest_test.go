package suggest_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/app"
	"github.com/mcpwarden/mcpwarden/internal/app/apptest"
	"github.com/mcpwarden/mcpwarden/internal/recorded"
	"github.com/mcpwarden/mcpwarden/internal/suggest"
	"github.com/mcpwarden/mcpwarden/rules"
)

// policyYAML is the policy the tests suggest for; $WS is the workspace.
const policyYAML = `servers:
  fs:
    command: /bin/true
    cwd: $WS
  web:
    command: /bin/true
policy:
  default: ask
  workspace: ["$WS"]
  deny: ["mcp:*:*:@path=**/.env"]
  ask: ["mcp:fs:write_file"]
  allow: ["mcp:fs:list_*"]
audit: { sink: none }
`

// setup loads policyYAML with its workspace in a new directory, and
// returns it with the workspace.
func setup(t *testing.T) (*app.Setup, string) {
	t.Helper()
	return setupWith(t, "")
}

// setupWith is setup with extra top-level YAML.
func setupWith(t *testing.T, extra string) (*app.Setup, string) {
	t.Helper()
	return setupYAML(t, policyYAML+extra)
}

// setupYAML loads yaml, $WS its workspace, as setup does.
func setupYAML(t *testing.T, yaml string) (*app.Setup, string) {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	return apptest.Setup(t, dir, strings.ReplaceAll(yaml, "$WS", ws)), ws
}

// asked is a request of tool recorded as asked by default and allowed
// once; args is JSON.
func asked(tool, args string) recorded.Request {
	server, name, _ := strings.Cut(strings.TrimPrefix(tool, "mcp:"), ":")
	var m map[string]any
	if err := json.Unmarshal([]byte(args), &m); err != nil {
		panic(err)
	}
	return recorded.Request{
		Call:     rules.Call{Server: server, Tool: name, Arguments: m},
		Decision: audit.DecisionAsk, Rule: rules.RuleDefault, GrantedBy: audit.GrantedByUserOnce, Outcome: audit.OutcomeAllowed,
		Redacted: recorded.RedactedKeys(m),
	}
}

func TestSuggestGeneralisesAsSpecified(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		reqs    []string // tool, args, tool, args, …
		want    []string
		outside []string
	}{
		{"two files of a folder give the folder",
			[]string{"mcp:fs:read_file", `{"path":"$WS/src/a.go"}`, "mcp:fs:read_file", `{"path":"$WS/src/b.go"}`},
			[]string{"mcp:fs:read_file:path=$WS/src/**"}, nil},
		{"files of two folders give their narrowest common folder",
			[]string{"mcp:fs:read_file", `{"path":"$WS/src/a/x.go"}`, "mcp:fs:read_file", `{"path":"$WS/src/b/y.go"}`},
			[]string{"mcp:fs:read_file:path=$WS/src/**"}, nil},
		{"one file is named exactly",
			[]string{"mcp:fs:read_file", `{"path":"$WS/src/a.go"}`},
			[]string{"mcp:fs:read_file:path=$WS/src/a.go"}, nil},
		{"a relative path is read against the server's root",
			[]string{"mcp:fs:read_file", `{"path":"src/a.go"}`, "mcp:fs:read_file", `{"path":"src/b.go"}`},
			[]string{"mcp:fs:read_file:path=$WS/src/**"}, nil},
		{"a path outside the workspace is named exactly and flagged",
			[]string{"mcp:fs:read_file", `{"path":"/etc/hosts"}`, "mcp:fs:read_file", `{"path":"/etc/hostname"}`},
			[]string{"mcp:fs:read_file:path=/etc/hostname", "mcp:fs:read_file:path=/etc/hosts"}, []string{"/etc/hostname", "/etc/hosts"}},
		{"paths inside and outside the workspace give two rules",
			[]string{"mcp:fs:read_file", `{"path":"$WS/a"}`, "mcp:fs:read_file", `{"path":"/etc/hosts"}`},
			[]string{"mcp:fs:read_file:path=$WS/a", "mcp:fs:read_file:path=/etc/hosts"}, []string{"/etc/hosts"}},
		{"URLs give their scheme and host",
			[]string{"mcp:web:fetch", `{"url":"https://Example.com/a?b=1"}`, "mcp:web:fetch", `{"url":"https://example.com/c"}`},
			[]string{"mcp:web:fetch:url.host=example.com:url.scheme=https"}, nil},
		{"commands are named exactly, one rule each",
			[]string{"mcp:web:run", `{"command":"npm test"}`, "mcp:web:run", `{"command":"npm run build"}`},
			[]string{"mcp:web:run:command=npm run build", "mcp:web:run:command=npm test"}, nil},
		{"connections are named exactly, port and all",
			[]string{"mcp:web:network/connect", `{"host":"registry.npmjs.org","port":443}`},
			[]string{"mcp:web:network/connect:host=registry.npmjs.org:port=443"}, nil},
		{"glob characters and a colon that would start a condition are escaped",
			[]string{"mcp:fs:read_file", `{"path":"$WS/[x]*:a=b,c"}`},
			[]string{`mcp:fs:read_file:path=$WS/\[x\]\*\:a=b\,c`}, nil},
		{"an array of paths gives the folder of them all",
			[]string{"mcp:fs:read_multiple_files", `{"paths":["$WS/a/x","$WS/a/y"]}`},
			[]string{"mcp:fs:read_multiple_files:paths=$WS/a/**"}, nil},
		// A file: URI is also read as a relative path (the server's root
		// joined to "file:/…"), which the rule must cover too.
		{"file: URIs are paths named by @path",
			[]string{"mcp:fs:resources/read", `{"uri":"file://$WS/docs/a.md"}`, "mcp:fs:resources/read", `{"uri":"file://$WS/docs/b.md"}`},
			[]string{"mcp:fs:resources/read:@path=$WS/**"}, nil},
		{"a source and a destination are each generalised on their own",
			[]string{"mcp:fs:move_file", `{"source":"$WS/in/a","destination":"$WS/out/a"}`, "mcp:fs:move_file", `{"source":"$WS/in/b","destination":"$WS/out/b"}`},
			[]string{"mcp:fs:move_file:destination=$WS/out/**:source=$WS/in/**"}, nil},
		{"a tool without path, URL or command arguments is named alone",
			[]string{"mcp:web:search", `{"q":"x"}`, "mcp:web:search", `{"q":"y"}`},
			[]string{"mcp:web:search"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st, ws := setup(t)
			var reqs []recorded.Request
			for i := 0; i < len(tt.reqs); i += 2 {
				reqs = append(reqs, asked(tt.reqs[i], strings.ReplaceAll(tt.reqs[i+1], "$WS", ws)))
			}
			res, err := suggest.Suggest(reqs, st.Suggesting())
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, w := range tt.want {
				want = append(want, strings.ReplaceAll(w, "$WS", ws))
			}
			slices.Sort(want)
			if diff := cmp.Diff(want, res.Rules()); diff != "" {
				t.Errorf("rules (-want +got):\n%s\nnot suggested: %+v", diff, res.NotSuggested)
			}
			var outside []string
			for _, r := range res.Allow {
				outside = append(outside, r.OutsideWorkspace...)
			}
			if diff := cmp.Diff(tt.outside, outside); diff != "" {
				t.Errorf("flagged outside the workspace (-want +got):\n%s", diff)
			}
			// Every rule allows what it was suggested for.
			next, err := st.WithAllow(res.Rules())
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range reqs {
				if v := next.Decide(r.Call, false).Verdict; v.Decision != rules.Allow {
					t.Errorf("%s is %v by %s with the suggested rules, want allow", r.String(), v.Decision, v.Rule)
				}
			}
		})
	}
}

// TestSuggestNeverWidensPastTheWorkspace: paths in two top folders of the
// workspace, and two in one folder outside it, never give a folder above
// the workspace nor outside it, and a path beside them stays not allowed.
func TestSuggestNeverWidensPastTheWorkspace(t *testing.T) {
	t.Parallel()
	st, ws := setup(t)
	reqs := []recorded.Request{
		asked("mcp:fs:read_file", `{"path":"`+ws+`/a/x"}`),
		asked("mcp:fs:read_file", `{"path":"`+ws+`/b/y"}`),
		asked("mcp:fs:read_file", `{"path":"`+filepath.Dir(ws)+`/elsewhere/z"}`),
		asked("mcp:fs:read_file", `{"path":"`+filepath.Dir(ws)+`/elsewhere/w"}`),
	}
	res, err := suggest.Suggest(reqs, st.Suggesting())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"mcp:fs:read_file:path=" + filepath.Dir(ws) + "/elsewhere/w", "mcp:fs:read_file:path=" + filepath.Dir(ws) + "/elsewhere/z", "mcp:fs:read_file:path=" + ws + "/**"}
	if diff := cmp.Diff(want, res.Rules()); diff != "" {
		t.Fatalf("rules (-want +got):\n%s", diff)
	}
	next, err := st.WithAllow(res.Rules())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Dir(ws) + "/elsewhere/other", filepath.Dir(ws) + "/x", "/etc/passwd", ws + "2/x"} {
		c := rules.Call{Server: "fs", Tool: "read_file", Arguments: map[string]any{"path": p}}
		if v := next.Decide(c, false).Verdict; v.Decision == rules.Allow {
			t.Errorf("%s is allowed by %s with the suggested rules: they widen past the workspace", p, v.Rule)
		}
	}
}

// TestRecordedDenyIsNeverSuggested: a request a deny rule refused (one
// that the config since dropped, too) is listed as refused, and the folder
// its siblings would generalise to is narrowed so that it stays refused.
func TestRecordedDenyIsNeverSuggested(t *testing.T) {
	t.Parallel()
	st, ws := setup(t)
	denied := asked("mcp:fs:read_file", `{"path":"`+ws+`/src/secret.txt"}`)
	denied.Decision, denied.Rule, denied.GrantedBy, denied.Outcome = audit.DecisionDeny, "mcp:fs:read_file:path=**/secret*", audit.GrantedByRule, audit.OutcomeNone
	envDenied := asked("mcp:fs:read_file", `{"path":"`+ws+`/.env"}`)
	envDenied.Decision, envDenied.Rule, envDenied.Outcome = audit.DecisionAllow, "mcp:fs:*", audit.OutcomeNone // allowed back then; the config's deny rule refuses it now
	reqs := []recorded.Request{
		asked("mcp:fs:read_file", `{"path":"`+ws+`/src/a.go"}`),
		asked("mcp:fs:read_file", `{"path":"`+ws+`/src/b.go"}`),
		denied, envDenied,
	}
	res, err := suggest.Suggest(reqs, st.Suggesting())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"mcp:fs:read_file:path={" + ws + "/src/a.go," + ws + "/src/b.go}"}
	if diff := cmp.Diff(want, res.Rules()); diff != "" {
		t.Fatalf("rules (-want +got):\n%s", diff)
	}
	if got := res.Allow[0].Narrowed; !strings.Contains(got, "/src/** would also allow") || !strings.Contains(got, "secret.txt") {
		t.Errorf("narrowed = %q, want the folder and the refused request named", got)
	}
	next, err := st.WithAllow(res.Rules())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []recorded.Request{denied, envDenied} {
		if v := next.Decide(r.Call, false).Verdict; v.Decision == rules.Allow {
			t.Errorf("%s, refused by a deny rule, is allowed by %s with the suggested rules", r.String(), v.Rule)
		}
	}
	if got := whys(res); !slices.ContainsFunc(got, func(s string) bool {
		return strings.HasPrefix(s, "refused by a deny rule (mcp:fs:read_file:path=**/secret*)")
	}) ||
		!slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "refused by a deny rule (mcp:*:*:@path=**/.env)") }) {
		t.Errorf("not suggested = %q, want both deny rules named", got)
	}
}

// TestAskAPersonRefusedIsNotSuggested: an ask refused by a person is not
// suggested, and the same request approved another time is not either.
func TestAskAPersonRefusedIsNotSuggested(t *testing.T) {
	t.Parallel()
	st, ws := setup(t)
	refused := asked("mcp:fs:read_file", `{"path":"`+ws+`/notes.txt"}`)
	refused.GrantedBy, refused.Outcome = audit.GrantedByApprovalPage, audit.OutcomeRefused
	again := asked("mcp:fs:read_file", `{"path":"`+ws+`/notes.txt"}`)
	timedOut := asked("mcp:web:fetch", `{"url":"https://example.com/"}`)
	timedOut.GrantedBy, timedOut.Outcome = audit.GrantedByTimeout, audit.OutcomeRefused
	res, err := suggest.Suggest([]recorded.Request{refused, again, timedOut}, st.Suggesting())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"mcp:web:fetch:url.host=example.com:url.scheme=https"}, res.Rules()); diff != "" {
		t.Errorf("rules (-want +got):\n%s\nnot suggested: %q", diff, whys(res))
	}
	if got := whys(res); !slices.Contains(got, "refused by a person when asked; not suggested") {
		t.Errorf("not suggested = %q, want the person's refusal named", got)
	}
}

// TestRedactedValueIsNeverNamedInARule: a value the audit log redacted at
// a key a rule would name is reported, never written into a rule; one at
// another key does not matter.
func TestRedactedValueIsNeverNamedInARule(t *testing.T) {
	t.Parallel()
	st, ws := setup(t)
	reqs := []recorded.Request{
		asked("mcp:fs:read_file", `{"path":"`+audit.Redacted+`"}`),
		asked("mcp:web:fetch", `{"url":"https://u:`+audit.Redacted+`@example.com/"}`),
		asked("mcp:web:fetch", `{"url":"https://`+audit.Redacted+`/x"}`),
		asked("mcp:web:run", `{"command":"deploy --token `+audit.Redacted+`"}`),
		asked("mcp:fs:edit_file", `{"path":"`+ws+`/a","content":"first line <redacted: 900 chars>"}`),
	}
	res, err := suggest.Suggest(reqs, st.Suggesting())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Rules() {
		if strings.Contains(r, "redacted") {
			t.Errorf("rule %s names the redaction marker", r)
		}
	}
	if diff := cmp.Diff([]string{"mcp:fs:edit_file:path=" + ws + "/a", "mcp:web:fetch:url.host=example.com:url.scheme=https"}, res.Rules()); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
	want := []string{"recorded with a redacted value at command; not suggested", "recorded with a redacted value at path; not suggested", "recorded with a redacted value at url; not suggested"}
	if diff := cmp.Diff(want, whys(res)); diff != "" {
		t.Errorf("not suggested (-want +got):\n%s", diff)
	}
}

// TestAlreadyAllowedAndAskRulesAreNotSuggested: a request a rule of the
// config allows needs nothing; one an ask rule asks about cannot be
// allowed by adding an allow rule, and says so.
func TestAlreadyAllowedAndAskRulesAreNotSuggested(t *testing.T) {
	t.Parallel()
	st, ws := setup(t)
	reqs := []recorded.Request{
		asked("mcp:fs:list_directory", `{"path":"`+ws+`"}`),
		asked("mcp:fs:write_file", `{"path":"`+ws+`/a"}`),
	}
	res, err := suggest.Suggest(reqs, st.Suggesting())
	if err != nil {
		t.Fatal(err)
	}
	if res.Allowed != 1 || len(res.Allow) != 0 {
		t.Errorf("allowed already = %d, rules = %q; want 1 and none", res.Allowed, res.Rules())
	}
	if diff := cmp.Diff([]string{"asked by the ask rule mcp:fs:write_file, which no allow rule overrides; not suggested"}, whys(res)); diff != "" {
		t.Errorf("not suggested (-want +got):\n%s", diff)
	}
}

// TestFlowRuleDecisionIsNotSuggested: a request a flow rule asked about,
// after an earlier request of its session armed the rule's label, is not
// suggested: no allow rule overrides the flow rule.
func TestFlowRuleDecisionIsNotSuggested(t *testing.T) {
	t.Parallel()
	st, _ := setup(t)
	flowAsked := asked("mcp:web:send_mail", `{"to":"a@example.com"}`)
	flowAsked.Session, flowAsked.ArmedBy, flowAsked.Rule = "s1", "f1", "flow"
	res, err := suggest.Suggest([]recorded.Request{flowAsked}, st.Suggesting())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Allow) != 0 || len(res.NotSuggested) != 1 || !strings.Contains(res.NotSuggested[0].Why, "flow rule") {
		t.Errorf("rules %q, not suggested %q; want none, and the flow rule named", res.Rules(), whys(res))
	}
}

func whys(res suggest.Result) []string {
	var out []string
	for _, s := range res.NotSuggested {
		out = append(out, s.Why)
	}
	return out
}

// TestServerDefaultSaysWhereTheRuleGoes: a server whose policy has a
// default of its own decides by it whatever a global allow says; the rule
// is not suggested under policy:, and the reason says where it goes.
func TestServerDefaultSaysWhereTheRuleGoes(t *testing.T) {
	t.Parallel()
	st, ws := setupYAML(t, "servers:\n  fs:\n    command: /bin/true\n    policy: { default: deny }\npolicy: { default: ask, workspace: [\"$WS\"] }\naudit: { sink: none }\n")
	denied := asked("mcp:fs:read_file", `{"path":"`+ws+`/a"}`)
	denied.Decision, denied.GrantedBy, denied.Outcome = audit.DecisionDeny, audit.GrantedByRule, audit.OutcomeNone
	res, err := suggest.Suggest([]recorded.Request{denied}, st.Suggesting())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"the rule mcp:fs:read_file:path=" + ws + "/a would not allow it under policy: servers.fs.policy's default (deny) decides it; add the rule to servers.fs.policy.allow instead"}
	if diff := cmp.Diff(want, whys(res)); diff != "" || len(res.Allow) != 0 {
		t.Errorf("rules %q; not suggested (-want +got):\n%s", res.Rules(), diff)
	}
}

// TestLoopbackConnectionSaysTheRuleThatReachesIt: a connection to a
// special address (loopback, private, link-local) recorded in shadow mode
// was refused by the egress proxy on its own, which only an allow rule
// naming the address literally lifts. It is not suggested, and the reason
// says so and names that rule, rather than that no rule allows it.
func TestLoopbackConnectionSaysTheRuleThatReachesIt(t *testing.T) {
	t.Parallel()
	st, _ := setup(t)
	tests := []struct {
		name, host string
	}{
		{"a loopback address", "127.0.0.1"},
		{"a private address", "10.0.0.7"},
		{"the metadata service's link-local address", "169.254.169.254"},
		{"the IPv6 loopback address", "::1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := asked("mcp:web:network/connect", `{"host":"`+tt.host+`","port":8080}`)
			res, err := suggest.Suggest([]recorded.Request{req}, st.Suggesting())
			if err != nil {
				t.Fatal(err)
			}
			got := whys(res)
			if len(res.Allow) != 0 || len(got) != 1 {
				t.Fatalf("rules %q; not suggested %q; want none and one reason", res.Rules(), got)
			}
			if rule := "mcp:web:network/connect:host=" + tt.host + ":port=8080"; !strings.HasPrefix(got[0], "refused by the egress proxy") || !strings.Contains(got[0], rule) || strings.Contains(got[0], "no rule allows") {
				t.Errorf("the reason %q, want the egress proxy's refusal naming the rule %s", got[0], rule)
			}
		})
	}
}
