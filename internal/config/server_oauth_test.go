package config

import (
	"strings"
	"testing"
)

func TestServerOAuthBlockLoads(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte(`
servers:
  linear:
    url: https://mcp.linear.example/mcp
    oauth: { client_id: mcpwarden, client_secret_env: LINEAR_SECRET, scopes: [read, write] }
`), ".yaml", "/cfg", nil)
	if err != nil {
		t.Fatal(err)
	}
	o := cfg.Servers["linear"].OAuth
	if o == nil || o.ClientID != "mcpwarden" || o.ClientSecretEnv != "LINEAR_SECRET" || len(o.Scopes) != 2 ||
		o.EffectiveGrant() != GrantAuthorizationCode || o.EffectiveClientID() != "mcpwarden" {
		t.Fatalf("servers.linear.oauth = %+v", o)
	}
}

func TestBadServerOAuthIsRefusedNamingTheKey(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, server, want string }{
		{"a stdio server takes no oauth", `{ command: x, oauth: { client_id: c } }`, "servers.s.oauth: only a remote server"},
		{"tokens are not sent in the clear", `{ url: "http://a.example/mcp", oauth: { client_id: c } }`, "must be https"},
		{"client credentials need a client", `{ url: "https://a.example/mcp", oauth: { client_secret_env: S, grant: client_credentials } }`, "client_id is required for grant client_credentials"},
		{"only one kind of client", `{ url: "https://a.example/mcp", oauth: { client_id: c, client_metadata_url: "https://me.example/client.json" } }`, "not both"},
		{"a metadata document is https", `{ url: "https://a.example/mcp", oauth: { client_metadata_url: "http://me.example/client.json" } }`, "client_metadata_url"},
		{"an unknown grant", `{ url: "https://a.example/mcp", oauth: { client_id: c, grant: password } }`, `servers.s.oauth.grant: "password"`},
		{"client credentials need a secret", `{ url: "https://a.example/mcp", oauth: { client_id: c, grant: client_credentials } }`, "client_secret_env: required"},
		{"a static Authorization header would fight the token", `{ url: "https://a.example/mcp", headers: { authorization: x }, oauth: { client_id: c } }`, "Authorization header"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte("servers:\n  s: "+tt.server+"\n"), ".yaml", "/cfg", nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestOAuthWithoutAClientOrOverSSEIsAccepted(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, server string }{
		{"no client: login registers one", `{ url: "https://a.example/mcp", oauth: { scopes: [x] } }`},
		{"an sse server", `{ url: "https://a.example/sse", transport: sse, oauth: { client_id: c } }`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := Parse([]byte("servers:\n  s: "+tt.server+"\n"), ".yaml", "/cfg", nil); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestHTTPOAuthOnLoopbackIsAccepted(t *testing.T) {
	t.Parallel()
	_, err := Parse([]byte(`
servers:
  s: { url: "http://127.0.0.1:8080/mcp", oauth: { client_metadata_url: "https://me.example/client.json", grant: authorization_code } }
`), ".yaml", "/cfg", nil)
	if err != nil {
		t.Fatal(err)
	}
}

func TestUpstreamTokenFileOutlivesTheRuntimeDir(t *testing.T) {
	t.Parallel()
	env := map[string]string{"XDG_RUNTIME_DIR": "/run/user/1", "HOME": "/home/u"}
	got, err := UpstreamTokenFile(func(k string) string { return env[k] })
	if err != nil || got != "/home/u/.local/state/mcpwarden/upstream-tokens.enc" {
		t.Fatalf("UpstreamTokenFile = %q, %v", got, err)
	}
	cfg := &Config{}
	if !strings.Contains(strings.Join(cfg.OwnFiles(func(k string) string { return env[k] }), " "), got) {
		t.Error("the upstream token file is not among mcpwarden's own files, which local servers are kept from")
	}
}
