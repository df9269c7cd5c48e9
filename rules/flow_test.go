package rules

import (
	"strings"
	"testing"
)

// flowSpec is a policy that allows everything of web, mail and fs, with
// flow rules breaking the untrusted input → egress chain.
func flowSpec() Spec {
	return Spec{
		Global: PolicySpec{
			Deny:  []string{"mcp:fs:*:@path=**/.env"},
			Allow: []string{"mcp:web:*", "mcp:mail:*", "mcp:fs:*", "mcp:gh:*"},
		},
		Servers: map[string]ServerSpec{"fs": {Root: "/srv"}},
		Labels: map[string][]string{
			"untrusted_input": {"mcp:web:fetch", "mcp:mail:read_*", "mcp:fs:read_file:path=/srv/downloads/**"},
			"egress":          {"mcp:mail:send_*", "mcp:web:post", "mcp:gh:*:@path=/**"},
			"private":         {"mcp:fs:*:@path=/srv/secrets/**"},
		},
		Flow: []FlowSpec{
			{After: "untrusted_input", Then: "ask", On: "egress"},
			{After: "private", Then: "deny", On: "egress"},
		},
	}
}

func TestFlowRulesEscalateAfterAnArmedLabel(t *testing.T) {
	t.Parallel()
	p := mustCompile(t, flowSpec())
	fetched := Arming{Label: "untrusted_input", ID: "id-fetch", Tool: "mcp:web:fetch"}
	secret := Arming{Label: "private", ID: "id-secret", Tool: "mcp:fs:read_file"}
	tests := []struct {
		name    string
		call    Call
		args    string
		want    Decision
		rule    string
		armedBy string
	}{
		{"mail is allowed before any untrusted input", Call{Server: "mail", Tool: "send_mail"}, "", Allow, "mcp:mail:*", ""},
		{"mail is asked after a fetch returned", Call{Server: "mail", Tool: "send_mail", Armed: []Arming{fetched}}, "", Ask, "flow[0]: after untrusted_input then ask on egress", "id-fetch"},
		{"a request that is not egress stays allowed after a fetch", Call{Server: "mail", Tool: "list_folders", Armed: []Arming{fetched}}, "", Allow, "mcp:mail:*", ""},
		{"a second fetch stays allowed", Call{Server: "web", Tool: "fetch", Armed: []Arming{fetched}}, "", Allow, "mcp:web:*", ""},
		{"mail is denied after private data was read", Call{Server: "mail", Tool: "send_mail", Armed: []Arming{secret}}, "", Deny, "flow[1]: after private then deny on egress", "id-secret"},
		{"the stricter of two armed flow rules wins", Call{Server: "mail", Tool: "send_mail", Armed: []Arming{fetched, secret}}, "", Deny, "flow[1]: after private then deny on egress", "id-secret"},
		{"a deny stays a deny whatever is armed", Call{Server: "fs", Tool: "write_file", Armed: []Arming{fetched}}, `{"path":"/srv/.env"}`, Deny, "mcp:fs:*:@path=**/.env", ""},
		{"an egress label with a condition escalates only what it matches", Call{Server: "gh", Tool: "push_files", Armed: []Arming{fetched}}, `{"files":[{"path":"/a"}]}`, Ask, "flow[0]: after untrusted_input then ask on egress", "id-fetch"},
		{"an egress label with a condition leaves the rest allowed", Call{Server: "gh", Tool: "get_issue", Armed: []Arming{fetched}}, `{"number":1}`, Allow, "mcp:gh:*", ""},
		{"an armed label no flow rule uses changes nothing", Call{Server: "mail", Tool: "send_mail", Armed: []Arming{{Label: "egress", ID: "x"}}}, "", Allow, "mcp:mail:*", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := decideBoth(t, p, tt.call, tt.args)
			if got.Decision != tt.want || got.Rule != tt.rule || got.ArmedBy != tt.armedBy {
				t.Errorf("Decide = %v by %q armed by %q (%s), want %v by %q armed by %q", got.Decision, got.Rule, got.ArmedBy, got.Reason, tt.want, tt.rule, tt.armedBy)
			}
			if tt.armedBy != "" && (got.Gate != GateFlow || !strings.Contains(got.Reason, "(call "+tt.armedBy+")")) {
				t.Errorf("Decide = %+v, want gate %q and a reason naming call %s", got, GateFlow, tt.armedBy)
			}
			if ex := p.Explain(tt.call); tt.args == "" && ex.Verdict != got {
				t.Errorf("Explain = %+v, want Decide's %+v", ex.Verdict, got)
			}
		})
	}
}

// TestSessionGrantForAnAskRuleDoesNotCoverTheFlowAsk: an ask rule already
// asks for egress, and the human may have granted it for the session
// before anything was armed; once a label is armed the flow rule names
// itself, so that grant (bound to the rule) does not settle it.
func TestSessionGrantForAnAskRuleDoesNotCoverTheFlowAsk(t *testing.T) {
	t.Parallel()
	s := flowSpec()
	s.Global.Ask = []string{"mcp:mail:send_*"}
	s.Global.Deny = append(s.Global.Deny, "mcp:mail:send_bulk")
	s.Flow = []FlowSpec{{After: "untrusted_input", Then: "ask", On: "egress"}, {After: "untrusted_input", Then: "ask", On: "egress"}}
	p := mustCompile(t, s)
	armed := []Arming{{Label: "untrusted_input", ID: "a"}}
	if got := p.Decide(Call{Server: "mail", Tool: "send_mail"}); got.Rule != "mcp:mail:send_*" {
		t.Errorf("Decide before arming = %+v, want the ask rule", got)
	}
	got := p.Decide(Call{Server: "mail", Tool: "send_mail", Armed: armed})
	if got.Decision != Ask || got.Rule != "flow[0]: after untrusted_input then ask on egress" || got.ArmedBy != "a" {
		t.Errorf("Decide after arming = %+v, want the first flow rule's ask", got)
	}
	if got := p.Decide(Call{Server: "mail", Tool: "send_bulk", Armed: armed}); got.Decision != Deny || got.Rule != "mcp:mail:send_bulk" {
		t.Errorf("Decide of a denied egress = %+v, want the deny rule's deny", got)
	}
}

func TestLabelsNameWhatACallCarries(t *testing.T) {
	t.Parallel()
	p := mustCompile(t, flowSpec())
	tests := []struct {
		name string
		call Call
		args string
		want string
	}{
		{"a fetch is untrusted input", Call{Server: "web", Tool: "fetch"}, "", "untrusted_input"},
		{"a sent mail is egress", Call{Server: "mail", Tool: "send_mail"}, "", "egress"},
		{"a read of a secret is private", Call{Server: "fs", Tool: "read_file"}, `{"path":"secrets/key"}`, "private"},
		{"a read of a download is untrusted input", Call{Server: "fs", Tool: "read_file"}, `{"path":"/srv/downloads/x.html"}`, "untrusted_input"},
		{"a read that mixes both is both", Call{Server: "fs", Tool: "read_file"}, `{"path":"/srv/downloads/x","paths":["/srv/secrets/y"]}`, "private untrusted_input"},
		{"a traversal into the secrets is private", Call{Server: "fs", Tool: "list"}, `{"path":"/srv/public/../secrets"}`, "private"},
		{"a plain tool carries none", Call{Server: "mail", Tool: "list_folders"}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.call.Arguments = decodeArgs(t, tt.args, true)
			if got := strings.Join(p.Labels(tt.call), " "); got != tt.want {
				t.Errorf("Labels = %q, want %q", got, tt.want)
			}
		})
	}
	if got := (*Policy)(nil).Labels(Call{Server: "web", Tool: "fetch"}); got != nil {
		t.Errorf("nil Policy Labels = %q, want none", got)
	}
}

func TestLabelAndFlowErrorsNameTheirKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		labels map[string][]string
		flow   []FlowSpec
		want   string
	}{
		{"a bad pattern", map[string][]string{"egress": {"mcp:mail:send_*", "mail:send"}}, nil, "labels.egress[1]"},
		{"a relative path pattern", map[string][]string{"private": {"mcp:fs:*:@path=secrets/**"}}, nil, "labels.private[0]"},
		{"a label without patterns", map[string][]string{"egress": nil}, nil, "labels.egress: a label needs"},
		{"a bad label name", map[string][]string{"Egress!": {"mcp:a:b"}}, nil, `"Egress!" is not a label name`},
		{"an unknown after label", map[string][]string{"egress": {"mcp:a:b"}}, []FlowSpec{{After: "untrusted", Then: "ask", On: "egress"}}, `flow[0].after: "untrusted" is not a label`},
		{"an unknown on label", map[string][]string{"egress": {"mcp:a:b"}}, []FlowSpec{{After: "egress", Then: "ask", On: "egres"}}, `flow[0].on: "egres"`},
		{"a flow rule that would allow", map[string][]string{"egress": {"mcp:a:b"}}, []FlowSpec{{After: "egress", Then: "allow", On: "egress"}}, `flow[0].then: "allow" is not ask or deny`},
		{"a flow rule without then", map[string][]string{"egress": {"mcp:a:b"}}, []FlowSpec{{After: "egress", On: "egress"}}, `flow[0].then: "" is not ask or deny`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Compile(Spec{Labels: tt.labels, Flow: tt.flow})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Compile = %v, want an error naming %q", err, tt.want)
			}
		})
	}
}

func TestFlowChangesThePolicyHash(t *testing.T) {
	t.Parallel()
	plain := flowSpec()
	plain.Flow = nil
	a, b := mustCompile(t, flowSpec()), mustCompile(t, plain)
	if a.SHA256() == b.SHA256() {
		t.Error("a policy with flow rules hashes like one without them")
	}
}

func TestExplainShowsTheFlowRules(t *testing.T) {
	t.Parallel()
	p := mustCompile(t, flowSpec())
	ex := p.Explain(Call{Server: "mail", Tool: "send_mail", Armed: []Arming{{Label: "untrusted_input", Tool: "mcp:web:fetch"}}})
	var saw []string
	for _, s := range ex.Steps {
		if s.Gate == GateFlow {
			saw = append(saw, s.Rule+" "+s.Why)
		}
	}
	want := []string{
		"flow[0]: after untrusted_input then ask on egress untrusted_input was armed by mcp:web:fetch, and the request is labelled egress",
		"flow[1]: after private then deny on egress private is not armed in this session",
	}
	if strings.Join(saw, "\n") != strings.Join(want, "\n") {
		t.Errorf("flow steps:\n%s\nwant:\n%s", strings.Join(saw, "\n"), strings.Join(want, "\n"))
	}
}

func TestDecideWithoutEscalationDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	p := mustCompile(t, flowSpec())
	calls := map[string]Call{
		"nothing armed":                         {Server: "mail", Tool: "send_mail"},
		"an armed label, no egress":             {Server: "mail", Tool: "list_folders", Armed: []Arming{{Label: "untrusted_input", ID: "a"}}},
		"an armed label no flow rule escalates": {Server: "mail", Tool: "send_mail", Armed: []Arming{{Label: "egress", ID: "a"}}},
	}
	for name, c := range calls {
		if n := testing.AllocsPerRun(100, func() { p.Decide(c) }); n != 0 {
			t.Errorf("Decide with %s allocates %v times, want 0", name, n)
		}
	}
}

// BenchmarkDecideFlow measures benchSpec(1000) with labels and flow rules
// added: with nothing armed (the common case, which must cost what
// BenchmarkDecide's does), with a label armed on a request that is not
// egress, and on one a flow rule escalates.
func BenchmarkDecideFlow(b *testing.B) {
	spec := benchSpec(1000)
	spec.Labels = map[string][]string{"untrusted_input": {"mcp:web:fetch", "mcp:*:read_*"}, "egress": {"mcp:s1:tool_1", "mcp:mail:send_*"}}
	spec.Flow = []FlowSpec{{After: "untrusted_input", Then: "ask", On: "egress"}}
	p := mustCompile(b, spec)
	armed := []Arming{{Label: "untrusted_input", ID: "id", Tool: "mcp:web:fetch"}}
	for _, c := range benchCalls(1000) {
		b.Run("nothing_armed/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.Decide(c.call)
			}
		})
	}
	for _, c := range benchCalls(1000)[1:2] {
		c.call.Armed = armed
		b.Run("armed_not_egress/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.Decide(c.call)
			}
		})
	}
	c := benchCalls(1000)[0]
	c.call.Armed = armed
	b.Run("armed_escalated/"+c.name, func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p.Decide(c.call)
		}
	})
}

func TestLintFindsLabelsThatCannotApply(t *testing.T) {
	t.Parallel()
	s := flowSpec()
	s.Labels["egress"] = append(s.Labels["egress"], "mcp:mail:sendmail", "mcp:fs:upload:path=/srv/**")
	s.Labels["unused"] = []string{"mcp:web:fetch"}
	p := mustCompile(t, s)
	tools := []ToolInfo{
		{Server: "web", Name: "fetch"}, {Server: "web", Name: "post"}, {Server: "mail", Name: "send_mail"}, {Server: "mail", Name: "read_inbox"},
		{Server: "gh", Name: "push_files", Keys: []string{"files"}}, {Server: "fs", Name: "read_file", Keys: []string{"path"}},
		{Server: "fs", Name: "upload", Keys: []string{"paths"}, StringKeys: []string{"paths"}},
	}
	var got []string
	for _, f := range p.Lint(tools) {
		if strings.HasPrefix(f.Where, "labels.") {
			got = append(got, f.Where+" "+f.Message)
		}
	}
	for _, want := range []string{
		"labels.egress[3] matches no known tool, so it never gives a request the label egress",
		"labels.egress[4] ",
		"labels.unused no flow rule uses the label unused",
	} {
		found := false
		for _, g := range got {
			found = found || strings.HasPrefix(g, want)
		}
		if !found {
			t.Errorf("Lint lacks %q; label findings:\n%s", want, strings.Join(got, "\n"))
		}
	}
	for _, g := range got {
		if strings.HasPrefix(g, "labels.untrusted_input") || strings.HasPrefix(g, "labels.private") {
			t.Errorf("Lint flags a label that applies: %s", g)
		}
	}
}

// TestLintFindsAnArmingLabelThatMissesTheServersPrompts is the lint
// against security round 3's attack 8: labels named mcp:fetch:fetch, so the
// fetch server's prompt brought untrusted text with no label armed. A
// label a flow rule arms from (after:) that covers a server's tools but
// not its prompts/get or resources/read is flagged; one only used as on:
// (egress) is not, since prompts are no way out.
func TestLintFindsAnArmingLabelThatMissesTheServersPrompts(t *testing.T) {
	t.Parallel()
	tools := []ToolInfo{
		{Server: "web", Name: "fetch"}, {Server: "web", Name: "prompts/get"}, {Server: "web", Name: "resources/read"},
		{Server: "mail", Name: "send_mail"}, {Server: "mail", Name: "read_inbox"}, {Server: "mail", Name: "prompts/get"},
		{Server: "fs", Name: "read_file"}, {Server: "gh", Name: "push_files"},
	}
	tests := []struct {
		name      string
		untrusted []string
		want      []string // label findings about prompts, by their start
	}{
		{"a tool alone misses the prompt and resources", []string{"mcp:web:fetch"},
			[]string{`labels.untrusted_input gives the label to mcp:web:fetch but not to mcp:web:prompts/get, mcp:web:resources/read`}},
		{"the server's every request is covered", []string{"mcp:web:*"}, nil},
		{"the prompt and resources named one by one", []string{"mcp:web:fetch", "mcp:web:prompts/get", "mcp:web:resources/read"}, nil},
		{"a server without prompts is not flagged", []string{"mcp:fs:read_file"}, nil},
		{"each server is judged on its own", []string{"mcp:web:*", "mcp:mail:read_*"},
			[]string{`labels.untrusted_input gives the label to mcp:mail:read_inbox but not to mcp:mail:prompts/get`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := flowSpec()
			s.Labels["untrusted_input"] = tt.untrusted
			s.Labels["egress"] = []string{"mcp:mail:send_*"} // used only as on: never flagged
			var got []string
			for _, f := range mustCompile(t, s).Lint(tools) {
				if strings.Contains(f.Message, "prompts/get") || strings.Contains(f.Message, "resources/read") {
					got = append(got, f.Where+" "+f.Message)
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("prompt findings = %q, want %d", got, len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("finding %q, want it to start %q", got[i], w)
				}
			}
		})
	}
}
