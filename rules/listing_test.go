package rules

import "testing"

func TestHidden(t *testing.T) {
	t.Parallel()
	p := mustCompile(t, Spec{
		Global:   PolicySpec{Deny: []string{"mcp:fs:delete_*", "mcp:fs:write_file:path=/etc/**"}},
		Servers:  map[string]ServerSpec{"git": {Policy: PolicySpec{Deny: []string{"mcp:git:push"}}}},
		Profiles: map[string]PolicySpec{"ci": {Deny: []string{"mcp:*:read_*"}}},
	})
	tests := []struct {
		name string
		call Call
		want bool
	}{
		{name: "a tool an unconditional deny matches is hidden", call: Call{Server: "fs", Tool: "delete_file"}, want: true},
		{name: "a tool a conditional deny matches is shown", call: Call{Server: "fs", Tool: "write_file"}, want: false},
		{name: "arguments are ignored", call: Call{Server: "fs", Tool: "write_file", Arguments: map[string]any{"path": "/etc/x"}}, want: false},
		{name: "a server gate's deny hides", call: Call{Server: "git", Tool: "push"}, want: true},
		{name: "a profile deny hides for that profile", call: Call{Profile: "ci", Server: "fs", Tool: "read_file"}, want: true},
		{name: "a profile deny does not hide for others", call: Call{Server: "fs", Tool: "read_file"}, want: false},
		{name: "an unknown profile hides everything", call: Call{Profile: "nope", Server: "fs", Tool: "list"}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := p.Hidden(tt.call); got != tt.want {
				t.Errorf("Hidden(%+v) = %v, want %v", tt.call, got, tt.want)
			}
		})
	}
}

func TestAskFallback(t *testing.T) {
	t.Parallel()
	p := mustCompile(t, Spec{
		Global: PolicySpec{AskFallback: "allow"},
		Servers: map[string]ServerSpec{
			"fs":  {Policy: PolicySpec{AskFallback: "deny"}},
			"git": {Policy: PolicySpec{Allow: []string{"mcp:git:log"}}},
		},
		Profiles: map[string]PolicySpec{"ci": {AskFallback: "deny"}, "dev": {AskFallback: "allow"}},
	})
	q := mustCompile(t, Spec{Profiles: map[string]PolicySpec{"dev": {AskFallback: "allow"}}})
	tests := []struct {
		name string
		p    *Policy
		call Call
		want Fallback
	}{
		{name: "a server deny beats a global allow", p: p, call: Call{Server: "fs"}, want: "deny"},
		{name: "the global value applies to a server without one", p: p, call: Call{Server: "git"}, want: "allow"},
		{name: "a profile deny narrows", p: p, call: Call{Profile: "ci", Server: "git"}, want: "deny"},
		{name: "a profile allow cannot widen", p: q, call: Call{Profile: "dev", Server: "git"}, want: ""},
		{name: "an unknown profile is deny", p: p, call: Call{Profile: "nope", Server: "git"}, want: "deny"},
		{name: "a nil policy is deny", p: nil, call: Call{Server: "git"}, want: "deny"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.p.AskFallback(tt.call); got != tt.want {
				t.Errorf("AskFallback(%+v) = %q, want %q", tt.call, got, tt.want)
			}
		})
	}
}

func TestNilPolicyFailsClosed(t *testing.T) {
	t.Parallel()
	var p *Policy
	c := Call{Server: "fs", Tool: "read_file"}
	if v := p.Decide(c); v.Decision != Deny || v.Reason == "" {
		t.Errorf("Decide = %+v, want a deny with a reason", v)
	}
	if e := p.Explain(c); e.Verdict.Decision != Deny {
		t.Errorf("Explain = %+v, want a deny", e)
	}
	if !p.Hidden(c) {
		t.Error("Hidden = false, want true")
	}
	if p.SHA256() != "" || p.Lint(nil) != nil {
		t.Error("SHA256 or Lint of a nil policy is not empty")
	}
}

func TestSHA256(t *testing.T) {
	t.Parallel()
	a := Spec{
		Global:  PolicySpec{Deny: []string{"mcp:a:x", "mcp:b:y"}},
		Servers: map[string]ServerSpec{"a": {Root: "/a"}, "b": {Root: "/b"}},
	}
	b := Spec{
		Global:   PolicySpec{Deny: []string{"mcp:a:x", "mcp:b:y"}, Allow: []string{}},
		Servers:  map[string]ServerSpec{"b": {Root: "/b"}, "a": {Root: "/a"}},
		PathKeys: DefaultPathKeys(),
	}
	c := Spec{Global: PolicySpec{Deny: []string{"mcp:b:y", "mcp:a:x"}}, Servers: a.Servers}
	sa, sb, sc := mustCompile(t, a).SHA256(), mustCompile(t, b).SHA256(), mustCompile(t, c).SHA256()
	if len(sa) != 64 {
		t.Errorf("SHA256 = %q, want 64 hex digits", sa)
	}
	if sa != sb {
		t.Errorf("equivalent specs hash differently: %s, %s", sa, sb)
	}
	if sa == sc {
		t.Error("reordered rules hash alike; the order decides which rule is named")
	}
}
