package config

import (
	"strings"
	"testing"
)

func TestIsolationIsRefusedWhereItCannotHold(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		data string
		want []string
	}{
		{"per_principal on a url server", "servers:\n  gh: { url: http://x, isolation: per_principal }\n", []string{"servers.gh.isolation", "url server"}},
		{"per_session on a url server", "servers:\n  gh: { url: http://x, isolation: per_session }\n", []string{"servers.gh.isolation"}},
		{"an unknown isolation", "servers:\n  fs: { command: x, isolation: per_user }\n", []string{"servers.fs.isolation", "per_principal"}},
		{"a negative idle timeout", "servers:\n  fs: { command: x, isolation: per_principal, isolation_idle_timeout: -1s }\n", []string{"servers.fs.isolation_idle_timeout"}},
		{"a negative cap", "servers:\n  fs: { command: x, isolation: per_session, isolation_max: -1 }\n", []string{"servers.fs.isolation_max"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tt.data), ".yaml", "/cfg", nil)
			if err == nil {
				t.Fatal("Parse accepted bad input")
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

func TestIsolationOfAStdioServerLoads(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte("servers:\n  fs: { command: x, isolation: per_principal, isolation_idle_timeout: 2m, isolation_max: 3 }\n"), ".yaml", "/cfg", nil)
	if err != nil {
		t.Fatal(err)
	}
	fs := cfg.Servers["fs"]
	if fs.Isolation != IsolationPerPrincipal || fs.IsolationIdleTimeout.Minutes() != 2 || fs.IsolationMax != 3 {
		t.Errorf("fs = isolation %q, idle %s, max %d; want per_principal, 2m, 3", fs.Isolation, fs.IsolationIdleTimeout, fs.IsolationMax)
	}
}
