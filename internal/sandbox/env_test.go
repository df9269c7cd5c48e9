package sandbox

import (
	"maps"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestServerEnvIsTheAllowlistHomeTmpDirAndTheServersOwn(t *testing.T) {
	t.Parallel()
	parent := []string{
		"PATH=/usr/bin", "LANG=C.UTF-8", "LC_ALL=C", "TZ=UTC", "TERM=xterm", "HOME=/home/me",
		"MCPWARDEN_TOKEN_KEY=k", "GITHUB_TOKEN=g", "AWS_SECRET_ACCESS_KEY=a", "SSH_AUTH_SOCK=/tmp/agent", "NODE_OPTIONS=--x",
	}
	tests := []struct {
		name string
		p    Policy
		want []string
	}{
		{"the zero policy passes the allowlist alone", Policy{},
			[]string{"PATH=/usr/bin", "LANG=C.UTF-8", "LC_ALL=C", "TZ=UTC", "TERM=xterm"}},
		{"HOME and TMPDIR are the private ones", Policy{Home: "/s/home", TmpDir: "/s/tmp"},
			[]string{"PATH=/usr/bin", "LANG=C.UTF-8", "LC_ALL=C", "TZ=UTC", "TERM=xterm", "HOME=/s/home", "TMPDIR=/s/tmp"}},
		{"passthrough names a variable", Policy{Passthrough: []string{"NODE_OPTIONS"}},
			[]string{"PATH=/usr/bin", "LANG=C.UTF-8", "LC_ALL=C", "TZ=UTC", "TERM=xterm", "NODE_OPTIONS=--x"}},
		{"passthrough never passes MCPWARDEN_*", Policy{Passthrough: []string{"MCPWARDEN_TOKEN_KEY", "MCPWARDEN_*", "*"}},
			parentWithout(parent, "MCPWARDEN_")},
		{"the server's env overrides and adds", Policy{Env: []string{"PATH=/opt/bin", "API_URL=x"}},
			[]string{"PATH=/opt/bin", "LANG=C.UTF-8", "LC_ALL=C", "TZ=UTC", "TERM=xterm", "API_URL=x"}},
		{"the server's env cannot set MCPWARDEN_*", Policy{Env: []string{"mcpwarden_token_key=x"}},
			[]string{"PATH=/usr/bin", "LANG=C.UTF-8", "LC_ALL=C", "TZ=UTC", "TERM=xterm"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, serverEnv(parent, tt.p)); diff != "" {
				t.Errorf("serverEnv (-want +got):\n%s", diff)
			}
		})
	}
}

func parentWithout(env []string, prefix string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, prefix) {
			out = append(out, kv)
		}
	}
	return out
}

// FuzzServerEnvNeverPassesMcpwardenVariables checks that no environment,
// passthrough or server env lets a MCPWARDEN_ variable (in any case)
// through, and that every name appears once.
func FuzzServerEnvNeverPassesMcpwardenVariables(f *testing.F) {
	f.Add("MCPWARDEN_TOKEN_KEY=k\x00PATH=/bin", "MCPWARDEN_*\x00*", "mcpwarden_x=1")
	f.Add("A=1\x00A=2", "A", "A=3\x00B")
	f.Fuzz(func(t *testing.T, parent, pass, env string) {
		p := Policy{Passthrough: strings.Split(pass, "\x00"), Env: strings.Split(env, "\x00")}
		seen := map[string]bool{}
		for _, kv := range serverEnv(strings.Split(parent, "\x00"), p) {
			name, _, _ := strings.Cut(kv, "=")
			if strings.HasPrefix(strings.ToUpper(name), "MCPWARDEN_") {
				t.Fatalf("%q passed", kv)
			}
			if seen[name] {
				t.Fatalf("%q twice", name)
			}
			seen[name] = true
		}
	})
}

// A server's own env (or a passed-through variable) naming another proxy,
// or NO_PROXY=*, would send its clients around the egress proxy, where
// they reach nothing: the proxy's variables win.
func TestProxyVariablesOverrideTheServersOwn(t *testing.T) {
	t.Parallel()
	p := Policy{Passthrough: []string{"HTTPS_PROXY"}, Env: []string{"http_proxy=http://10.0.0.1:8080", "NO_PROXY=*", "NODE_USE_ENV_PROXY=0"}}
	env := withEnv(serverEnv([]string{"HTTPS_PROXY=http://evil.example:3128"}, p), proxyEnv(4321)...)
	want := map[string]string{
		"HTTP_PROXY": "http://127.0.0.1:4321", "http_proxy": "http://127.0.0.1:4321",
		"HTTPS_PROXY": "http://127.0.0.1:4321", "https_proxy": "http://127.0.0.1:4321",
		"ALL_PROXY": "http://127.0.0.1:4321", "all_proxy": "http://127.0.0.1:4321",
		"NO_PROXY": "", "no_proxy": "", "NODE_USE_ENV_PROXY": "1",
	}
	got := map[string]string{}
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		if _, ok := want[name]; ok {
			if _, twice := got[name]; twice {
				t.Fatalf("%s set twice: %q", name, env)
			}
			got[name] = value
		}
	}
	if !maps.Equal(got, want) {
		t.Fatalf("proxy variables = %v, want %v", got, want)
	}
}

// FuzzProxyEnvironmentWinsOverAnyServerEnvironment: whatever the server's
// environment holds, each proxy variable is set once, to the proxy.
func FuzzProxyEnvironmentWinsOverAnyServerEnvironment(f *testing.F) {
	f.Add("HTTP_PROXY=x\x00HTTP_PROXY=y\x00no_proxy", uint16(3128))
	f.Add("NO_PROXY=*\x00=\x00ALL_PROXY", uint16(1))
	f.Fuzz(func(t *testing.T, env string, port uint16) {
		proxy := proxyEnv(port)
		got := withEnv(strings.Split(env, "\x00"), proxy...)
		for _, kv := range proxy {
			name, _, _ := strings.Cut(kv, "=")
			n := 0
			for _, e := range got {
				if en, _, _ := strings.Cut(e, "="); en == name {
					n++
					if e != kv {
						t.Fatalf("%q, want %q", e, kv)
					}
				}
			}
			if n != 1 {
				t.Fatalf("%s set %d times in %q", name, n, got)
			}
		}
	})
}

func TestTierAndNetworkReadOnlyTheirNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		text    string
		wantErr bool
	}{
		{"namespaces is a tier", "namespaces", false},
		{"landlock is a tier", "landlock", false},
		{"auto is a tier", "auto", false},
		{"a typo is an error", "landlok", true},
		{"case matters", "Landlock", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var tier Tier
			err := tier.UnmarshalText([]byte(tt.text))
			if (err != nil) != tt.wantErr {
				t.Fatalf("UnmarshalText(%q) = %v", tt.text, err)
			}
			if err == nil {
				if got, _ := tier.MarshalText(); string(got) != tt.text {
					t.Errorf("round trip %q = %q", tt.text, got)
				}
			}
		})
	}
	for _, name := range []string{"none", "host", "proxy"} {
		var n Network
		if err := n.UnmarshalText([]byte(name)); err != nil || n.String() != name {
			t.Errorf("network %q read as %v (%v)", name, n, err)
		}
	}
	var n Network
	if err := n.UnmarshalText([]byte("Proxy")); err == nil {
		t.Error(`network "Proxy" is read: case matters`)
	}
}
