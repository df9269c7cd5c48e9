package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// TestGrantIsBoundToPrincipal: alice allows her session to write a file;
// mallory, with another token, sends a call on alice's session id. The
// grant is alice's: mallory's call is asked again (and denied here).
func TestGrantIsBoundToPrincipal(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testkit.FreeAddr(t), "  fs:\n"+serverFilesystem("SANDBOX"), `  default: deny
  ask: ["mcp:fs:write_file"]`)
	f.appendConfig(t, fmt.Sprintf(`ask:
  timeout: 20s
  approvals: local
  approvals_listen: %q
profiles:
  alice:
    servers: [fs]
    tokens_env: [ALICE_TOKEN]
  mallory:
    servers: [fs]
    tokens_env: [MALLORY_TOKEN]
`, testkit.FreeAddr(t)))
	url, _ := startHTTP(t, f, "ALICE_TOKEN=alice-secret", "MALLORY_TOKEN=mallory-secret")
	tok := readPageToken(t, f)
	// Legacy protocol: 2026-07-28 has no sessions, so no session grants.
	tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer alice-secret"}))
	if err != nil {
		t.Fatal(err)
	}
	alice := client.NewClient(tr, client.WithLegacyProtocolOnly())
	t.Cleanup(func() { alice.Close() })
	initialize(t, alice)
	target := filepath.Join(f.sandbox, "shared.txt")

	first := callAsync(t, alice, map[string]any{"path": target, "content": "alice"})
	runCLI(t, "approve", pendingAskID(t, tok), "--session", "--config", f.config)
	if res := result(t, first); res.IsError {
		t.Fatalf("alice's approved write: %s", testkit.Text(res))
	}
	if res := write(t, alice, target, "alice again"); res.IsError {
		t.Fatalf("alice's session grant did not cover her next write: %s", testkit.Text(res))
	}

	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"fs__write_file","arguments":{"path":%q,"content":"mallory"}}}`, target)
	replied := make(chan string, 1)
	go func() {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer mallory-secret")
		req.Header.Set("Mcp-Session-Id", alice.GetSessionId())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			replied <- err.Error()
			return
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		replied <- fmt.Sprintf("%d %s", resp.StatusCode, data)
	}()
	select {
	case r := <-replied:
		// Refused outright (the session is not mallory's): nothing written.
		t.Logf("mallory's call on alice's session: %s", r)
	case <-time.After(10 * time.Second):
		t.Fatal("mallory's call neither returned nor was asked")
	case <-pendingAsk(t, tok):
		runCLI(t, "deny", pendingAskID(t, tok), "--config", f.config)
		t.Logf("mallory's call on alice's session: %s", <-replied)
	}
	if data, _ := os.ReadFile(target); string(data) == "mallory" {
		t.Error("alice's session grant let mallory's write through")
	}
}

// pendingAsk is closed when the approvals page lists a pending ask.
func pendingAsk(t *testing.T, tok pageToken) <-chan struct{} {
	t.Helper()
	ch := make(chan struct{})
	go func() {
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, tok.URL+"api/asks", nil)
			req.Header.Set("Authorization", "Bearer "+tok.Token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(data), `"pending":[{`) {
				close(ch)
				return
			}
		}
	}()
	return ch
}
