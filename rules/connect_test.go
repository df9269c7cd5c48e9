package rules

import (
	"strings"
	"testing"

	"github.com/mcpwarden/mcpwarden/internal/hostport"
)

// TestConnectHostPatternThatNeverMatchesIsALoadError: the proxy decides a
// connection's host normalised, so a deny written with another spelling
// would never hold; it is refused at load with the spelling to write.
func TestConnectHostPatternThatNeverMatchesIsALoadError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		rule string
		want string // "" loads
	}{
		{"a normalised host loads", "mcp:*:network/connect:host=api.github.com", ""},
		{"a lower-case glob loads", "mcp:*:network/connect:host=*.github.com", ""},
		{"a dotted quad loads", "mcp:*:network/connect:host=169.254.169.254", ""},
		{"a canonical IPv6 address loads", "mcp:*:network/connect:host=::1", ""},
		{"a regexp is not checked", "mcp:*:network/connect:host~=(?i)API\\.github\\.com", ""},
		{"another tool's host is not checked", "mcp:*:fetch:host=API.GitHub.com", ""},
		{"upper case", "mcp:*:network/connect:host=API.GitHub.com", "write host=api.github.com"},
		{"a trailing dot", "mcp:*:network/connect:host=api.github.com.", "write host=api.github.com"},
		{"a hex IPv4", "mcp:*:network/connect:host=0x7f.1", "write host=127.0.0.1"},
		{"a decimal IPv4", "mcp:*:network/connect:host=2852039166", "write host=169.254.169.254"},
		{"a long IPv6", "mcp:*:network/connect:host=0:0:0:0:0:0:0:1", "write host=::1"},
		{"an IPv6 in brackets", "mcp:*:network/connect:host=[::1]", "write host=::1"},
		{"a Unicode name", "mcp:*:network/connect:host=bücher.example", "write host=xn--bcher-kva.example"},
		{"an upper-case glob", "mcp:*:network/connect:host=*.GitHub.com", "write host=*.github.com"},
		{"a key in another case", "mcp:*:network/connect:HOST=Evil.test", "write host=evil.test"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, list := range []string{"deny", "allow"} {
				spec := PolicySpec{Deny: []string{tt.rule}}
				if list == "allow" {
					spec = PolicySpec{Allow: []string{tt.rule}}
				}
				_, err := Compile(global(spec))
				switch {
				case tt.want == "" && err != nil:
					t.Errorf("%s %q: %v", list, tt.rule, err)
				case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
					t.Errorf("%s %q loads with %v, want an error saying %q", list, tt.rule, err, tt.want)
				}
			}
		})
	}
}

// FuzzEveryDecidedHostCanBeDeniedExactly: every host the egress proxy
// decides (hostport.NormalizeHost's output) is a fixed point of the
// normaliser, so deciding it twice changes nothing, and a deny naming it,
// its glob characters escaped, loads and holds.
func FuzzEveryDecidedHostCanBeDeniedExactly(f *testing.F) {
	for _, seed := range []string{"api.github.com", "API.GitHub.com.", "0x7f.1", "2852039166", "::ffff:127.0.0.1", "bücher.example", "ａｐｉ.github.com", "a*b", `a\b`, "x:port=1", "[::1]", "::1%eth0"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, h string) {
		n, ok := hostport.NormalizeHost(h)
		if !ok {
			return
		}
		if again, ok := hostport.NormalizeHost(n); !ok || again != n {
			t.Fatalf("NormalizeHost(%q) = %q, but NormalizeHost(%q) = %q, %v", h, n, n, again, ok)
		}
		var esc strings.Builder
		for _, r := range n {
			if strings.ContainsRune(`*?[]{}\:`, r) {
				esc.WriteByte('\\')
			}
			esc.WriteRune(r)
		}
		rule := "mcp:fs:network/connect:host=" + esc.String()
		p, err := Compile(Spec{Global: PolicySpec{Deny: []string{rule}, Allow: []string{"mcp:fs:*"}}})
		if err != nil {
			t.Fatalf("the deny of a decided host %q does not load: %v", n, err)
		}
		if v := p.Decide(Call{Server: "fs", Tool: ToolConnect, Arguments: map[string]any{"host": n, "port": 443}}); v.Decision != Deny {
			t.Fatalf("%s does not deny host %q: %+v", rule, n, v)
		}
	})
}

// TestWildcardAllowDoesNotLetAServerConnectAnywhere: `allow:
// mcp:github:*` is written for GitHub's tools; it used to match
// network/connect too, so the server could connect to any host. Only an
// allow naming network (or the connection itself) lets a connection
// through; a wildcard deny or ask still covers connections.
func TestWildcardAllowDoesNotLetAServerConnectAnywhere(t *testing.T) {
	t.Parallel()
	connect := `{"host":"evil.example","port":443}`
	tests := []struct {
		name string
		spec PolicySpec
		want Decision
	}{
		{"a tool wildcard allow", PolicySpec{Default: "deny", Allow: []string{"mcp:github:*"}}, Deny},
		{"an everything allow", PolicySpec{Default: "ask", Allow: []string{"mcp:*:*"}}, Ask},
		{"a prefix glob allow", PolicySpec{Default: "deny", Allow: []string{"mcp:github:n*"}}, Deny},
		{"an allow naming network", PolicySpec{Default: "deny", Allow: []string{"mcp:github:network/*"}}, Allow},
		{"an allow naming the connection", PolicySpec{Default: "deny", Allow: []string{"mcp:github:network/connect:host=evil.example"}}, Allow},
		{"a wildcard deny still covers it", PolicySpec{Default: "allow", Deny: []string{"mcp:github:*"}}, Deny},
		{"a wildcard ask still covers it", PolicySpec{Default: "allow", Ask: []string{"mcp:*:*"}}, Ask},
	}
	if got := decideBoth(t, mustCompile(t, global(tests[0].spec)), Call{Server: "github", Tool: "get_issue"}, `{}`); got.Decision != Allow {
		t.Errorf("mcp:github:* no longer allows a tool: %s", got.Decision)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := mustCompile(t, global(tt.spec))
			got := decideBoth(t, p, Call{Server: "github", Tool: ToolConnect}, connect)
			if got.Decision != tt.want {
				t.Errorf("connect under %+v = %s (%s), want %s", tt.spec, got.Decision, got.Reason, tt.want)
			}
		})
	}
}
