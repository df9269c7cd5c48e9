package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// httpToken is the bearer token the hardened listener's config asks for.
const httpToken = "e2e-http-secret"

// startHardenedHTTP starts mcpwarden on loopback with a bearer token and a
// 64 KiB body limit, in front of the everything server.
func startHardenedHTTP(t *testing.T) string {
	t.Helper()
	f := newFixture(t, testkit.FreeAddr(t), "  everything:\n"+serverEverything(), `  default: deny
  allow: ["mcp:everything:echo"]`)
	f.appendConfig(t, "auth:\n  bearer_token_env: E2E_HTTP_TOKEN\nhttp:\n  max_body_bytes: 65536\n")
	url, _ := startHTTP(t, f, "E2E_HTTP_TOKEN="+httpToken)
	return url
}

// rawRequest sends one HTTP request to the listener, with the bearer token
// unless header sets Authorization (to "" for none), and returns the
// response with its body read.
func rawRequest(t *testing.T, method, url string, header map[string]string, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+httpToken)
	for k, v := range header {
		switch {
		case k == "Host":
			req.Host = v
		case v == "":
			req.Header.Del(k)
		default:
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, string(data)
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e-raw","version":"1.0"}}}`

func TestHTTPListenerRefusesAttacks(t *testing.T) {
	t.Parallel()
	url := startHardenedHTTP(t)
	big := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"pad":"` + strings.Repeat("x", 70_000) + `"}}`
	tests := []struct {
		name   string
		header map[string]string
		body   string
		want   int
	}{
		{"missing token is 401", map[string]string{"Authorization": ""}, initializeBody, http.StatusUnauthorized},
		{"wrong token is 401", map[string]string{"Authorization": "Bearer not-the-token"}, initializeBody, http.StatusUnauthorized},
		{"DNS-rebinding Host is 403", map[string]string{"Host": "attacker.example:8765"}, initializeBody, http.StatusForbidden},
		{"DNS-rebinding Host without a token is 403", map[string]string{"Host": "attacker.example", "Authorization": ""}, initializeBody, http.StatusForbidden},
		{"cross-origin page is 403", map[string]string{"Origin": "https://attacker.example"}, initializeBody, http.StatusForbidden},
		{"opaque origin is 403", map[string]string{"Origin": "null"}, initializeBody, http.StatusForbidden},
		{"oversized body is 413", nil, big, http.StatusRequestEntityTooLarge},
		{"localhost page with the token is served", map[string]string{"Origin": "http://localhost:5173", "Host": "localhost"}, initializeBody, http.StatusOK},
		{"client with the token is served", nil, initializeBody, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, body := rawRequest(t, http.MethodPost, url, tt.header, tt.body)
			if resp.StatusCode != tt.want {
				t.Errorf("status = %d, want %d; body %q", resp.StatusCode, tt.want, body)
			}
			if tt.want != http.StatusOK && resp.Header.Get("Mcp-Session-Id") != "" {
				t.Errorf("a refused request got a session: %s", resp.Header.Get("Mcp-Session-Id"))
			}
		})
	}
}

func TestDeleteEndsTheHTTPSession(t *testing.T) {
	t.Parallel()
	url := startHardenedHTTP(t)
	resp, body := rawRequest(t, http.MethodPost, url, nil, initializeBody)
	session := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || session == "" {
		t.Fatalf("initialize: status %d, session %q, body %q", resp.StatusCode, session, body)
	}
	inSession := map[string]string{"Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-11-25"}
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	if resp, body := rawRequest(t, http.MethodPost, url, inSession, ping); resp.StatusCode != http.StatusOK {
		t.Fatalf("ping in the live session: status %d, body %q", resp.StatusCode, body)
	} else if !strings.Contains(body, `"result"`) {
		t.Fatalf("ping in the live session: no result in %q", body)
	}

	if resp, body := rawRequest(t, http.MethodDelete, url, inSession, ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE: status %d, body %q", resp.StatusCode, body)
	}
	resp, body = rawRequest(t, http.MethodPost, url, inSession, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("tools/list after DELETE: status %d, want 404; body %q", resp.StatusCode, body)
	}
	var msg map[string]any
	if json.Unmarshal([]byte(body), &msg) == nil && msg["result"] != nil {
		t.Errorf("tools/list after DELETE returned a result: %q", body)
	}
	if resp, _ := rawRequest(t, http.MethodGet, url, map[string]string{"Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-11-25", "Accept": "text/event-stream"}, ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET stream after DELETE: status %d, want 404", resp.StatusCode)
	}
}
