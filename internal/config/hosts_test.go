package config

import (
	"strings"
	"testing"
)

// TestValidateRejectsHostTheGuardRejects holds allowed hosts and origins
// that the HTTP listener's guard refuses: validate must refuse them too,
// before any upstream has started, not let serve fail on them later.
func TestValidateRejectsHostTheGuardRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		http string
		key  string
	}{
		{"an unbracketed IPv6 host", `{ allowed_hosts: ["fe80::1"] }`, "http.allowed_hosts[0]"},
		{"an unbracketed IPv6 host with a port", `{ allowed_hosts: ["fd00::1:8080"] }`, "http.allowed_hosts[0]"},
		{"an unclosed bracket", `{ allowed_hosts: ["[fe80::1"] }`, "http.allowed_hosts[0]"},
		{"an IPv4 address in brackets", `{ allowed_hosts: ["[10.0.0.1]"] }`, "http.allowed_hosts[0]"},
		{"junk after the bracket", `{ allowed_hosts: ["[::1]x"] }`, "http.allowed_hosts[0]"},
		{"a named port", `{ allowed_hosts: ["example.com:http"] }`, "http.allowed_hosts[0]"},
		{"an empty port", `{ allowed_hosts: ["example.com:"] }`, "http.allowed_hosts[0]"},
		{"a port without a host", `{ allowed_hosts: [":8080"] }`, "http.allowed_hosts[0]"},
		{"a lone dot", `{ allowed_hosts: ["."] }`, "http.allowed_hosts[0]"},
		{"the second entry", `{ allowed_hosts: ["ok.example", "fe80::1"] }`, "http.allowed_hosts[1]"},
		{"an origin on an unbracketed IPv6 host", `{ allowed_origins: ["http://fe80::1"] }`, "http.allowed_origins[0]"},
		{"an origin with a named port", `{ allowed_origins: ["https://app.example.com:https"] }`, "http.allowed_origins[0]"},
		{"an opaque origin", `{ allowed_origins: ["https:app.example.com"] }`, "http.allowed_origins[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(minimal+"http: "+tt.http+"\n"), ".yaml", "/cfg", nil)
			if err == nil {
				t.Fatal("Parse accepted a host the guard refuses")
			}
			if !strings.Contains(err.Error(), tt.key) {
				t.Errorf("error %q does not mention %q", err, tt.key)
			}
		})
	}
}

func TestValidateAcceptsHostsTheGuardAccepts(t *testing.T) {
	t.Parallel()
	const h = `http: { allowed_hosts: ["mcp.example.com", "mcp.example.com:8443", "[fe80::1]", "[fd00::1]:80", "10.0.0.2", "Host.Example."], ` +
		`allowed_origins: ["https://app.example.com", "http://[fd00::1]:3000", "https://app.example.com/"] }` + "\n"
	if _, err := Parse([]byte(minimal+h), ".yaml", "/cfg", nil); err != nil {
		t.Fatal(err)
	}
}

// TestValidateRejectsAListenHostTheGuardRejects is the listen address's
// variant: serve adds the listener's own host to the allowed hosts, and a
// host the guard cannot parse failed serve after upstreams had started.
func TestValidateRejectsAListenHostTheGuardRejects(t *testing.T) {
	t.Parallel()
	for _, listen := range []string{"bad*host:8765", "my host:8765", "a@b:8765"} {
		data := minimal + "listen: \"" + listen + "\"\nauth: { bearer_token_env: MCPWARDEN_TOKEN }\n"
		_, err := Parse([]byte(data), ".yaml", "/cfg", []string{"MCPWARDEN_TOKEN=t"})
		if err == nil || !strings.Contains(err.Error(), "listen") {
			t.Errorf("listen %q: Parse = %v, want an error naming listen", listen, err)
		}
	}
	for _, listen := range []string{"0.0.0.0:8765", "[::]:8765", ":8765", "[fe80::1%eth0]:8765", "mcp.example.com:8765", "127.0.0.1:0"} {
		data := minimal + "listen: \"" + listen + "\"\nauth: { bearer_token_env: MCPWARDEN_TOKEN }\n"
		if _, err := Parse([]byte(data), ".yaml", "/cfg", []string{"MCPWARDEN_TOKEN=t"}); err != nil {
			t.Errorf("listen %q: %v", listen, err)
		}
	}
}
