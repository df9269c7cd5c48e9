package oauthlogin

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/mcpwarden/mcpwarden/internal/config"
	"github.com/mcpwarden/mcpwarden/internal/tokenstore"
)

func TestUpstreamOAuthFromTheConfig(t *testing.T) {
	t.Parallel()
	key := base64.StdEncoding.EncodeToString(make([]byte, tokenstore.KeySize))
	state := t.TempDir()
	server := func(grant string) config.Server {
		return config.Server{URL: "https://a.example/mcp", OAuth: &config.ServerOAuth{ClientID: "c", ClientSecretEnv: "SECRET", Grant: grant}}
	}
	tests := []struct {
		name    string
		srv     config.Server
		env     map[string]string
		wantErr string // in GetToken's error; "" for a working store
		wantCC  bool
	}{
		{"a server without oauth has none", config.Server{URL: "https://a.example/mcp"}, nil, "", false},
		{"a missing key is the server's error, naming the variable", server(""), map[string]string{"SECRET": "s", tokenstore.KeyringEnv: "off"}, tokenstore.KeyEnv, false},
		{"a missing secret is the server's error, naming the variable", server(""), map[string]string{tokenstore.KeyEnv: key}, "SECRET", false},
		{"authorization code reads the stored token", server(""), map[string]string{tokenstore.KeyEnv: key, "SECRET": "s"}, "", false},
		{"client credentials gets its own tokens", server(config.GrantClientCredentials), map[string]string{tokenstore.KeyEnv: key, "SECRET": "s"}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{"XDG_STATE_HOME": state}
			for k, v := range tt.env {
				env[k] = v
			}
			o := UpstreamOAuth("s", tt.srv, func(k string) string { return env[k] })
			if tt.srv.OAuth == nil {
				if o != nil {
					t.Fatalf("UpstreamOAuth = %+v, want nil", o)
				}
				return
			}
			if _, isCC := o.Tokens.(*ClientCredentials); isCC != tt.wantCC {
				t.Fatalf("Tokens is %T", o.Tokens)
			}
			if tt.wantErr != "" {
				_, err := o.Tokens.GetToken(t.Context())
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("GetToken = %v, want an error naming %s", err, tt.wantErr)
				}
				return
			}
			if o.ClientID != "c" || o.ClientSecret != "s" {
				t.Errorf("client %q / %q", o.ClientID, o.ClientSecret)
			}
		})
	}
}
