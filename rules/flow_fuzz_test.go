package rules

import (
	"slices"
	"testing"
)

// FuzzFlow compiles fuzzed label patterns with a flow rule between them
// and checks what flow rules promise: arming a label never loosens a
// decision, a request carrying the On label after After was armed is at
// least Then, and Explain agrees with Decide.
func FuzzFlow(f *testing.F) {
	f.Add("mcp:web:fetch", "mcp:mail:send_*", "mcp:mail:*", []byte(`{"to":"a@b"}`), "mail", "send_mail", true)
	f.Add("mcp:fs:*:@path=/srv/dl/**", "mcp:*:*:url.host=*.test", "mcp:*:*", []byte(`{"url":"https://x.test/","path":"dl/a"}`), "fs", "read", false)
	f.Add("mcp:*:*:@readOnly=true", "mcp:gh:*:@path=/**", "mcp:gh:*", []byte(`{"files":[{"path":"/a"}]}`), "gh", "push", true)
	f.Add("mcp:web:fetch", "mcp:mail:*:@label=a", "mcp:*:*", []byte(`{"to":"a@b"}`), "mail", "send_mail", false)
	f.Add("mcp:*:*:@label!=a", "mcp:*:*:@label=[ab]", "mcp:mail:*", []byte(`{}`), "mail", "send", true)
	f.Fuzz(func(t *testing.T, after, on, allow string, args []byte, server, tool string, deny bool) {
		then := "ask"
		if deny {
			then = "deny"
		}
		spec := Spec{
			Global: PolicySpec{Default: "allow", Allow: []string{allow}},
			Labels: map[string][]string{"a": {after}, "b": {on}},
			Flow:   []FlowSpec{{After: "a", Then: then, On: "b"}},
		}
		if ValidServerName(server) {
			spec.Servers = map[string]ServerSpec{server: {Root: "/srv", Home: "/home/u"}}
		}
		p, err := Compile(spec)
		if err != nil {
			return
		}
		c := Call{Server: server, Tool: tool, Arguments: fuzzArgs(args)}
		plain := p.Decide(c)
		c.Armed = []Arming{{Label: "a", ID: "id", Tool: "mcp:x:y"}}
		labels := p.Labels(c) // as the proxy works them out: with the session's labels (@label)
		armed := p.Decide(c)
		if armed.Decision > plain.Decision {
			t.Fatalf("arming loosened %+v to %+v", plain, armed)
		}
		want, _ := ParseDecision(then)
		if slices.Contains(labels, "b") && armed.Decision > want {
			t.Fatalf("a request labelled b after a was armed = %+v, want at least %v (labels %q)", armed, want, labels)
		}
		if !slices.Contains(labels, "b") && armed != plain {
			t.Fatalf("a request not labelled b changed from %+v to %+v", plain, armed)
		}
		if e := p.Explain(c); e.Verdict != armed {
			t.Fatalf("Explain = %+v, Decide = %+v", e.Verdict, armed)
		}
	})
}
