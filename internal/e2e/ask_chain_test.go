package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/config"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// cancels is a headless client's answer to every form: cancel at once.
func cancels(int, context.Context) (*mcp.ElicitationResult, error) {
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionCancel}}, nil
}

// accepts answers the form with accept and content as given.
func accepts(content any) func(int, context.Context) (*mcp.ElicitationResult, error) {
	return func(int, context.Context) (*mcp.ElicitationResult, error) {
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: content}}, nil
	}
}

// decisionEvents returns the audit log's decision events, whole.
func decisionEvents(t *testing.T, path string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, e := range auditLines[map[string]any](t, path) {
		if e["event"] == "decision" {
			out = append(out, e)
		}
	}
	return out
}

func field(e map[string]any, k string) string { s, _ := e[k].(string); return s }

// pendingAskID waits until the approvals API lists one pending ask and
// returns its id.
func pendingAskID(t *testing.T, tok pageToken) string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, tok.URL+"api/asks", nil)
		req.Header.Set("Authorization", "Bearer "+tok.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var s struct{ Pending []struct{ ID string } }
		_ = json.NewDecoder(resp.Body).Decode(&s)
		resp.Body.Close()
		if len(s.Pending) == 1 {
			return s.Pending[0].ID
		}
	}
	t.Fatal("no ask is pending on the approvals page")
	return ""
}

// runCLI runs mcpwarden with args and returns its combined output.
func runCLI(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), binary, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("mcpwarden %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestCancelledFormFallsThroughToApprove(t *testing.T) {
	t.Parallel()
	protocols(t, func(t *testing.T, _ bool, opts ...client.ClientOption) {
		f := approvalsFixture(t, "20s")
		h := &human{answer: cancels}
		c := connectStdio(t, f, append(opts, client.WithElicitationHandler(h))...)
		tok := readPageToken(t, f)
		target := filepath.Join(f.sandbox, "approved.txt")
		pending := callAsync(t, c, map[string]any{"path": target, "content": "x"})
		id := pendingAskID(t, tok)
		runCLI(t, "approve", id, "--config", f.config)
		if res := result(t, pending); res.IsError || !exists(target) {
			t.Fatalf("a cancelled form then mcpwarden approve: %q, written %v", testkit.Text(res), exists(target))
		}
		if h.times() != 1 {
			t.Errorf("the client was asked %d times, want 1", h.times())
		}
		events := decisionEvents(t, f.auditPath)
		if len(events) != 1 {
			t.Fatalf("decision events = %v, want one", events)
		}
		e := events[0]
		if got := field(e, "granted_by"); got != "approval_cli" {
			t.Errorf("granted_by = %q, want approval_cli (a cancel is not a denial)", got)
		}
		reason := field(e, "reason")
		for _, want := range []string{"the client cancelled the form", "allowed once with mcpwarden approve"} {
			if !strings.Contains(reason, want) {
				t.Errorf("reason %q lacks %q", reason, want)
			}
		}
		if got := field(e, "error"); got != "" {
			t.Errorf("error = %q, want none: nothing failed", got)
		}
		if got := field(e, "principal"); got != "local" {
			t.Errorf("principal = %q, want local", got)
		}
	})
}

func TestEmptyAcceptIsNoAnswer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		content any
		why     string
	}{
		{"an accept without content", nil, "without a choice"},
		{"an accept with an empty object", map[string]any{}, "without a choice"},
		{"an accept with an empty decision", map[string]any{"decision": ""}, "without a choice"},
		{"an accept with a value not offered", map[string]any{"decision": "allow_everything"}, "not a choice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			protocols(t, func(t *testing.T, _ bool, opts ...client.ClientOption) {
				f := askFixture(t)
				h := &human{answer: accepts(tt.content)}
				c := connectStdio(t, f, append(opts, client.WithElicitationHandler(h))...)
				target := filepath.Join(f.sandbox, "x.txt")
				res := write(t, c, target, "x")
				if !res.IsError || exists(target) {
					t.Fatalf("no answer and ask_fallback deny: %q, written %v", testkit.Text(res), exists(target))
				}
				if strings.Contains(testkit.Text(res), "denied on") {
					t.Errorf("result %q reports a denial; no one denied", testkit.Text(res))
				}
				events := decisionEvents(t, f.auditPath)
				if len(events) != 1 {
					t.Fatalf("decision events = %v, want one", events)
				}
				if got := field(events[0], "granted_by"); got == "user_denied" {
					t.Errorf("granted_by = %q: an empty accept is no answer, not a denial", got)
				}
				if reason := field(events[0], "reason"); !strings.Contains(reason, tt.why) || !strings.Contains(reason, "ask_fallback is deny") {
					t.Errorf("reason = %q, want it to say %q and the fallback", reason, tt.why)
				}
			})
		})
	}
}

// tokenPath is where the instance serving f keeps its approvals token: it
// inherits this process's environment.
func tokenPath(t *testing.T, f *fixture) string {
	t.Helper()
	cfg, err := config.Load(f.config, os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	path, err := cfg.TokenFilePath(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	return path
}
