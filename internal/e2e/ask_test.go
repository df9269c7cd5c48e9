package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// A human answers mcpwarden's approval requests through the client's
// elicitation handler.
type human struct {
	mu     sync.Mutex
	asked  []string // the messages shown
	answer func(n int, ctx context.Context) (*mcp.ElicitationResult, error)
}

func (h *human) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	h.mu.Lock()
	h.asked = append(h.asked, req.Params.Message)
	n := len(h.asked)
	h.mu.Unlock()
	return h.answer(n, ctx)
}

func (h *human) times() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.asked)
}

func says(decision string) func(int, context.Context) (*mcp.ElicitationResult, error) {
	return func(int, context.Context) (*mcp.ElicitationResult, error) {
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
			Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"decision": decision},
		}}, nil
	}
}

func declines(int, context.Context) (*mcp.ElicitationResult, error) {
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionDecline}}, nil
}

// askFixture puts write_file under an ask rule with a short ask timeout.
func askFixture(t *testing.T) *fixture {
	f := newFixture(t, "stdio", "  fs:\n"+serverFilesystem("SANDBOX"), `  default: deny
  ask: ["mcp:fs:write_file"]
  allow: ["mcp:fs:list_allowed_directories"]`)
	f.appendConfig(t, "ask:\n  timeout: 2s\n")
	return f
}

// protocols runs fn with a client on the legacy protocol (the proxy sends
// elicitation/create and waits) and on the 2026-07-28 protocol (the proxy
// answers with an input request and the client retries the call).
func protocols(t *testing.T, fn func(t *testing.T, legacy bool, opts ...client.ClientOption)) {
	t.Run("legacy", func(t *testing.T) { t.Parallel(); fn(t, true, client.WithLegacyProtocolOnly()) })
	t.Run("modern", func(t *testing.T) { t.Parallel(); fn(t, false) })
}

func write(t *testing.T, c *client.Client, path, content string) *mcp.CallToolResult {
	t.Helper()
	return callTool(t, c, "fs__write_file", map[string]any{"path": path, "content": content})
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func grantedBy(t *testing.T, f *fixture) []string {
	t.Helper()
	var out []string
	for _, e := range readAudit(t, f.auditPath, "decision") {
		out = append(out, e.Decision+"/"+e.GrantedBy)
	}
	return out
}

func TestAskAnswers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		answer      func(int, context.Context) (*mcp.ElicitationResult, error)
		wantWritten bool
		wantGranted string
		wantText    string
	}{
		{"allow once forwards the call", says("allow_once"), true, "ask/user_once", "Successfully wrote"},
		{"allow for the session forwards the call", says("allow_session"), true, "ask/user_session", "Successfully wrote"},
		{"deny refuses the call", says("deny"), false, "ask/user_denied", "denied"},
		{"declining refuses the call", declines, false, "ask/user_denied", "denied"},
		{"an unknown answer is no answer and falls back", says("yes please"), false, "ask/no_elicitation", "no one approved it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			protocols(t, func(t *testing.T, _ bool, opts ...client.ClientOption) {
				f := askFixture(t)
				h := &human{answer: tt.answer}
				c := connectStdio(t, f, append(opts, client.WithElicitationHandler(h))...)
				target := filepath.Join(f.sandbox, "out.txt")
				res := write(t, c, target, "hello")
				if got := exists(target); got != tt.wantWritten {
					t.Errorf("file written = %v, want %v (result %q)", got, tt.wantWritten, testkit.Text(res))
				}
				if res.IsError == tt.wantWritten || !strings.Contains(testkit.Text(res), tt.wantText) {
					t.Errorf("result = %q (isError %v), want it to contain %q", testkit.Text(res), res.IsError, tt.wantText)
				}
				if h.times() != 1 {
					t.Fatalf("the human was asked %d times, want 1", h.times())
				}
				msg := h.asked[0]
				for _, want := range []string{"mcp:fs:write_file", `rule "mcp:fs:write_file"`, target} {
					if !strings.Contains(msg, want) {
						t.Errorf("approval message %q lacks %q", msg, want)
					}
				}
				if got := grantedBy(t, f); len(got) != 1 || got[0] != tt.wantGranted {
					t.Errorf("audit decisions = %v, want [%s]", got, tt.wantGranted)
				}
				want := map[bool]string{true: "allowed", false: "refused"}[tt.wantWritten]
				for _, e := range decisionEvents(t, f.auditPath) {
					if got := field(e, "outcome"); got != want {
						t.Errorf("outcome = %q, want %q", got, want)
					}
				}
			})
		})
	}
}

func TestAllowOnceDoesNotCoverTheNextCall(t *testing.T) {
	t.Parallel()
	protocols(t, func(t *testing.T, _ bool, opts ...client.ClientOption) {
		f := askFixture(t)
		h := &human{answer: func(n int, ctx context.Context) (*mcp.ElicitationResult, error) {
			if n == 1 {
				return says("allow_once")(n, ctx)
			}
			return declines(n, ctx)
		}}
		c := connectStdio(t, f, append(opts, client.WithElicitationHandler(h))...)
		first, second := filepath.Join(f.sandbox, "a.txt"), filepath.Join(f.sandbox, "b.txt")
		write(t, c, first, "1")
		write(t, c, second, "2")
		if !exists(first) || exists(second) {
			t.Errorf("written: first %v second %v; want only the approved first", exists(first), exists(second))
		}
		if h.times() != 2 {
			t.Errorf("asked %d times, want 2: a once-grant covers one call only", h.times())
		}
	})
}

func TestSessionGrantCoversThatPathOnly(t *testing.T) {
	t.Parallel()
	protocols(t, func(t *testing.T, _ bool, opts ...client.ClientOption) {
		f := askFixture(t)
		h := &human{answer: func(n int, ctx context.Context) (*mcp.ElicitationResult, error) {
			if n == 1 {
				return says("allow_session")(n, ctx)
			}
			return declines(n, ctx)
		}}
		c := connectStdio(t, f, append(opts, client.WithElicitationHandler(h))...)
		granted := filepath.Join(f.sandbox, "granted.txt")
		other := filepath.Join(f.sandbox, "other.txt")
		write(t, c, granted, "1")
		if res := write(t, c, granted, "2"); res.IsError {
			t.Errorf("second write under the session grant refused: %s", testkit.Text(res))
		}
		if data, _ := os.ReadFile(granted); string(data) != "2" {
			t.Errorf("granted file holds %q, want the second write", data)
		}
		write(t, c, other, "3")
		if exists(other) {
			t.Errorf("the session grant for %s let a write to %s through", granted, other)
		}
		if got, want := grantedBy(t, f), []string{"ask/user_session", "ask/user_session", "ask/user_denied"}; strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("audit decisions = %v, want %v", got, want)
		}
		if h.times() != 2 {
			t.Errorf("asked %d times, want 2", h.times())
		}
	})
}

func TestUnansweredAskTimesOut(t *testing.T) {
	t.Parallel()
	f := askFixture(t)
	h := &human{answer: func(_ int, ctx context.Context) (*mcp.ElicitationResult, error) {
		<-ctx.Done() // the human never answers
		return nil, ctx.Err()
	}}
	c := connectStdio(t, f, client.WithLegacyProtocolOnly(), client.WithElicitationHandler(h))
	target := filepath.Join(f.sandbox, "late.txt")
	start := time.Now()
	res := write(t, c, target, "x")
	if !res.IsError || !strings.Contains(testkit.Text(res), "no answer came within 2s") {
		t.Errorf("result = %q, want a timeout refusal", testkit.Text(res))
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the timed-out ask took %v", d)
	}
	if exists(target) {
		t.Error("a timed-out ask was forwarded")
	}
	if got := grantedBy(t, f); len(got) != 1 || got[0] != "ask/timeout" {
		t.Errorf("audit decisions = %v, want [ask/timeout]", got)
	}
}

func TestLateRoundTripAnswerTimesOut(t *testing.T) {
	t.Parallel()
	f := askFixture(t)
	h := &human{answer: func(n int, ctx context.Context) (*mcp.ElicitationResult, error) {
		time.Sleep(2500 * time.Millisecond) // past ask.timeout
		return says("allow_once")(n, ctx)
	}}
	c := connectStdio(t, f, client.WithElicitationHandler(h))
	target := filepath.Join(f.sandbox, "late.txt")
	if res := write(t, c, target, "x"); !res.IsError || exists(target) {
		t.Errorf("a late answer was honoured: %q, written %v", testkit.Text(res), exists(target))
	}
	if got := grantedBy(t, f); len(got) != 1 || got[0] != "ask/timeout" {
		t.Errorf("audit decisions = %v, want [ask/timeout]", got)
	}
}

func TestClientWithoutElicitationFallsBack(t *testing.T) {
	t.Parallel()
	f := askFixture(t)
	c := connectStdio(t, f, client.WithLegacyProtocolOnly())
	target := filepath.Join(f.sandbox, "x.txt")
	res := write(t, c, target, "x")
	text := testkit.Text(res)
	for _, want := range []string{"needs approval", `"mcp:fs:write_file"`} {
		if !strings.Contains(text, want) {
			t.Errorf("refusal %q lacks %q", text, want)
		}
	}
	if strings.Contains(text, "ask_fallback") || strings.Contains(text, "policy.allow") {
		t.Errorf("refusal %q advises the model to widen the policy", text)
	}
	if e := decisionEvents(t, f.auditPath); len(e) != 1 || !strings.Contains(field(e[0], "reason"), "no elicitation capability") {
		t.Errorf("decision events = %v, want the reason to say the client cannot be asked", e)
	}
	if !res.IsError || exists(target) {
		t.Errorf("isError %v, written %v; want refused and not written", res.IsError, exists(target))
	}
	if got := grantedBy(t, f); len(got) != 1 || got[0] != "ask/no_elicitation" {
		t.Errorf("audit decisions = %v, want [ask/no_elicitation]", got)
	}
}

func TestAskFallbackAllowForwards(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "stdio", "  fs:\n"+serverFilesystem("SANDBOX"), `  default: deny
  ask_fallback: allow
  ask: ["mcp:fs:write_file"]`)
	c := connectStdio(t, f, client.WithLegacyProtocolOnly())
	target := filepath.Join(f.sandbox, "x.txt")
	if res := write(t, c, target, "x"); res.IsError || !exists(target) {
		t.Errorf("with ask_fallback allow the write was refused: %q", testkit.Text(res))
	}
}

func TestSessionGrantResolvesAConcurrentAsk(t *testing.T) {
	t.Parallel()
	f := askFixture(t)
	bothAsked := make(chan struct{})
	var once sync.Once
	h := &human{}
	h.answer = func(n int, ctx context.Context) (*mcp.ElicitationResult, error) {
		if n == 2 {
			once.Do(func() { close(bothAsked) })
			<-ctx.Done() // the second dialog is never answered: the grant resolves it
			return nil, ctx.Err()
		}
		select {
		case <-bothAsked:
		case <-time.After(5 * time.Second):
		}
		return says("allow_session")(n, ctx)
	}
	c := connectStdio(t, f, client.WithLegacyProtocolOnly(), client.WithElicitationHandler(h))
	target := filepath.Join(f.sandbox, "shared.txt")
	var wg sync.WaitGroup
	results := make([]*mcp.CallToolResult, 2)
	for i := range 2 {
		wg.Go(func() { results[i] = write(t, c, target, "concurrent") })
	}
	wg.Wait()
	for i, res := range results {
		if res == nil {
			t.FailNow() // write reported why
		}
		if res.IsError {
			t.Errorf("call %d refused: %s", i, testkit.Text(res))
		}
	}
	if got := grantedBy(t, f); len(got) != 2 || got[0] != "ask/user_session" || got[1] != "ask/user_session" {
		t.Errorf("audit decisions = %v, want two ask/user_session", got)
	}
}

func TestCallCancelledWhileAskingIsNotForwarded(t *testing.T) {
	t.Parallel()
	f := askFixture(t)
	asked := make(chan struct{})
	h := &human{answer: func(n int, ctx context.Context) (*mcp.ElicitationResult, error) {
		close(asked)
		<-ctx.Done()
		time.Sleep(500 * time.Millisecond) // a late "allow" must not count
		return says("allow_once")(n, ctx)
	}}
	c := connectStdio(t, f, client.WithLegacyProtocolOnly(), client.WithElicitationHandler(h))
	target := filepath.Join(f.sandbox, "cancelled.txt")
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-asked; cancel() }()
	_, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "fs__write_file", Arguments: map[string]any{"path": target, "content": "x"}}})
	if err == nil {
		t.Fatal("the cancelled call returned no error")
	}
	time.Sleep(3 * time.Second) // past the ask timeout: whatever the proxy does, it has done it
	if exists(target) {
		t.Fatal("a call cancelled while waiting for approval was forwarded")
	}
	for _, e := range readAudit(t, f.auditPath, "decision") {
		if e.GrantedBy == "user_once" {
			t.Errorf("audit shows the cancelled call as granted: %+v", e)
		}
	}
}
