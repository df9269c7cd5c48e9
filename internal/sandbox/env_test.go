package sandbox

import (
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
