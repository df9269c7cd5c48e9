package config

import (
	"strings"
	"testing"
)

func TestStateBlockLoads(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		data    string
		environ []string
		want    *State
	}{
		{"no state block keeps state in memory", minimal, nil, nil},
		{"a redis url with a namespace", minimal + "state: { url: \"redis://redis.mcp.svc:6379/0\", namespace: prod, password_env: REDIS_PASSWORD }\n", nil,
			&State{URL: "redis://redis.mcp.svc:6379/0", Namespace: "prod", PasswordEnv: "REDIS_PASSWORD"}},
		{"a TLS url", minimal + "state: { url: \"rediss://valkey.example:6380\" }\n", nil, &State{URL: "rediss://valkey.example:6380"}},
		{"a unix socket", minimal + "state: { url: \"unix:///run/redis/redis.sock\" }\n", nil, &State{URL: "unix:///run/redis/redis.sock"}},
		{"the url from the environment", minimal, []string{"MCPWARDEN_STATE__URL=redis://127.0.0.1:6379"}, &State{URL: "redis://127.0.0.1:6379"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse([]byte(tt.data), ".yaml", "/cfg", tt.environ)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.want == nil && cfg.State != nil:
				t.Fatalf("State = %+v, want none", cfg.State)
			case tt.want != nil && (cfg.State == nil || *cfg.State != *tt.want):
				t.Fatalf("State = %+v, want %+v", cfg.State, tt.want)
			}
		})
	}
}

func TestStateBlockRejectsBadInputNamingTheKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		data string
		want []string
	}{
		{"a block without a url", "state: { namespace: prod }\n", []string{"state.url", "required"}},
		{"an http url", "state: { url: \"http://redis:6379\" }\n", []string{"state.url", "redis://"}},
		{"a url without a host", "state: { url: \"redis://\" }\n", []string{"state.url", "no host"}},
		{"a unix url without a path", "state: { url: \"unix://\" }\n", []string{"state.url", "no socket path"}},
		{"a password in the url", "state: { url: \"redis://:hunter2@redis:6379\" }\n", []string{"state.url", "state.password_env"}},
		{"a url with options", "state: { url: \"redis://redis:6379?dial_timeout=1s\" }\n", []string{"state.url", "no query"}},
		{"a database that is no number", "state: { url: \"redis://redis:6379/x\" }\n", []string{"state.url", "database number"}},
		{"a url that does not parse", "state: { url: \"redis://:pw@h:port\" }\n", []string{"state.url", "is not a URL"}},
		{"a namespace with a colon", "state: { url: \"redis://redis:6379\", namespace: \"a:b\" }\n", []string{"state.namespace"}},
		{"a password_env that is no variable name", "state: { url: \"redis://redis:6379\", password_env: \"$X\" }\n", []string{"state.password_env"}},
		{"a misspelt key", "state: { url: \"redis://redis:6379\", namespce: x }\n", []string{"state.namespce"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(minimal+tt.data), ".yaml", "/cfg", nil)
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

// TestStateURLPasswordIsNotEchoed checks that the error for a password in
// state.url does not print the password (errors reach logs).
func TestStateURLPasswordIsNotEchoed(t *testing.T) {
	t.Parallel()
	_, err := Parse([]byte(minimal+"state: { url: \"redis://user:hunter2@redis:6379\" }\n"), ".yaml", "/cfg", nil)
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error %v: want one that does not show the password", err)
	}
}
