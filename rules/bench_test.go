package rules

import (
	"fmt"
	"testing"
)

// benchSpec builds a realistic mix of n rules over n/50 servers: half plain
// allows of literal tools, a fifth allows of a tool glob with a path
// condition, a tenth asks, a fifth denies with path, negated path and regexp
// conditions, plus a few rules for every server (`mcp:*:…`) as a global
// policy has.
func benchSpec(n int) Spec {
	servers := max(n/50, 1)
	var p PolicySpec
	p.Deny = []string{"mcp:*:*:path=**/.env", "mcp:*:delete_*"}
	p.Ask = []string{"mcp:*:*:cmd~=.*sudo .*"}
	for i := range n {
		s := fmt.Sprintf("s%d", i%servers)
		switch i % 10 {
		case 0, 1, 2, 3, 4:
			p.Allow = append(p.Allow, fmt.Sprintf("mcp:%s:tool_%d", s, i))
		case 5, 6:
			p.Allow = append(p.Allow, fmt.Sprintf("mcp:%s:read_%d_*:path=/srv/%s/**", s, i, s))
		case 7:
			p.Deny = append(p.Deny, fmt.Sprintf("mcp:%s:tool_%d:path=/etc/**", s, i))
		case 8:
			p.Ask = append(p.Ask, fmt.Sprintf("mcp:%s:tool_%d", s, i))
		case 9:
			if i%20 == 9 {
				p.Deny = append(p.Deny, fmt.Sprintf("mcp:%s:write_%d:path!=/srv/%s/**", s, i, s))
			} else {
				p.Deny = append(p.Deny, fmt.Sprintf("mcp:%s:tool_%d:cmd~=.*rm -rf.*", s, i))
			}
		}
	}
	return Spec{Global: p}
}

// benchCalls are the calls measured: allowed by a literal rule with non-path
// arguments, allowed by a path glob with a clean absolute path (no
// normalisation), denied by an unconditional rule, and asked by default.
func benchCalls(n int) []struct {
	name string
	call Call
} {
	servers := max(n/50, 1)
	s1 := fmt.Sprintf("s%d", 1%servers)
	s5 := fmt.Sprintf("s%d", 5%servers)
	return []struct {
		name string
		call Call
	}{
		{"allow_literal", Call{Server: s1, Tool: "tool_1", Arguments: map[string]any{"cmd": "ls -la", "n": 3}}},
		{"allow_path", Call{Server: s5, Tool: "read_5_file", Arguments: map[string]any{"path": "/srv/" + s5 + "/a/b.go"}}},
		{"deny_plain", Call{Server: s1, Tool: "delete_x"}},
		{"ask_default", Call{Server: s1, Tool: "unknown", Arguments: map[string]any{"q": "x"}}},
	}
}

func BenchmarkDecide(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		p := mustCompile(b, benchSpec(n))
		for _, c := range benchCalls(n) {
			b.Run(fmt.Sprintf("rules=%d/%s", n, c.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					p.Decide(c.call)
				}
			})
		}
	}
}

func TestDecideDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	p := mustCompile(t, benchSpec(1000))
	for _, c := range benchCalls(1000) {
		if n := testing.AllocsPerRun(100, func() { p.Decide(c.call) }); n != 0 {
			t.Errorf("Decide(%s) allocates %v times", c.name, n)
		}
	}
}

func TestBenchCallsDecideAsNamed(t *testing.T) {
	t.Parallel()
	want := map[string]Decision{"allow_literal": Allow, "allow_path": Allow, "deny_plain": Deny, "ask_default": Ask}
	for _, n := range []int{10, 1000, 10000} {
		p := mustCompile(t, benchSpec(n))
		for _, c := range benchCalls(n) {
			if got := p.Decide(c.call); got.Decision != want[c.name] {
				t.Errorf("rules=%d: %s = %+v, want %v", n, c.name, got, want[c.name])
			}
		}
	}
}

// BenchmarkDecideForms measures the readings this package adds on top of
// the common case: @path over an array of absolute paths, a URL host, a
// command allow, relative paths read against two roots, and a
// case-insensitive path comparison.
func BenchmarkDecideForms(b *testing.B) {
	spec := benchSpec(1000)
	spec.Global.Deny = append(spec.Global.Deny, "mcp:*:*:@path=**/.git/**", "mcp:web:*:url.host=169.254.169.254")
	spec.Global.Allow = append(spec.Global.Allow, "mcp:fs:read_multiple_files:@path=/srv/**", "mcp:web:fetch", "mcp:sh:run:cmd=ls*")
	calls := []struct {
		name string
		call Call
	}{
		{"at_path_array", Call{Server: "fs", Tool: "read_multiple_files", Arguments: map[string]any{"paths": []any{"/srv/a/b.go", "/srv/a/c.go", "/srv/d.go"}}}},
		{"url_host", Call{Server: "web", Tool: "fetch", Arguments: map[string]any{"url": "https://api.example.com/v1/x"}}},
		{"command", Call{Server: "sh", Tool: "run", Arguments: map[string]any{"cmd": "ls -la /srv"}}},
		{"relative_two_roots", Call{Server: "fs", Tool: "read_multiple_files", Arguments: map[string]any{"paths": []any{"a/b.go", "c.go"}}}},
	}
	spec.Servers = map[string]ServerSpec{"fs": {Root: "/srv/app", ExtraRoots: []string{"/srv/data"}}}
	for _, fold := range []bool{false, true} {
		spec.PathsCaseInsensitive = fold
		p := mustCompile(b, spec)
		for _, c := range calls {
			b.Run(fmt.Sprintf("fold=%v/%s", fold, c.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					p.Decide(c.call)
				}
			})
		}
	}
}

func TestDecideFormsDoNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	p := mustCompile(t, Spec{
		Global: PolicySpec{
			Deny:      []string{"mcp:*:*:@path=**/.env", "mcp:*:*:PATH=/etc/**"},
			Allow:     []string{"mcp:fs:read_*:@path=/srv/**", "mcp:sh:run:cmd=ls*"},
			Workspace: []string{"/srv"},
		},
		PathsCaseInsensitive: true,
	})
	calls := map[string]Call{
		"@path over an array in the workspace": {Server: "fs", Tool: "read_many", Arguments: map[string]any{"paths": []any{"/srv/a", "/srv/b/c"}, "Path": "/srv/x"}},
		"a command allow":                      {Server: "sh", Tool: "run", Arguments: map[string]any{"cmd": "ls -la"}},
	}
	for name, c := range calls {
		if got := p.Decide(c); got.Decision != Allow {
			t.Fatalf("%s: Decide = %+v, want allow", name, got)
		}
		if n := testing.AllocsPerRun(100, func() { p.Decide(c) }); n != 0 {
			t.Errorf("%s: Decide allocates %v times", name, n)
		}
	}
}
