package upstream

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

func startBackground(t *testing.T, specs map[string]Spec) (*Pool, *events) {
	t.Helper()
	evs := newEvents()
	pool := Start(t.Context(), specs, &Options{OnEvent: evs.add, Background: true, MinBackoff: 200 * time.Millisecond, MaxBackoff: time.Second})
	t.Cleanup(func() { pool.Close() })
	return pool, evs
}

func TestBackgroundStartDoesNotWaitForANeverAnsweringServer(t *testing.T) {
	t.Parallel()
	hang, _ := faulty(t, "hang-init")
	hang.InitTimeout = 30 * time.Second
	fine, _ := faulty(t, "")
	begin := time.Now()
	pool, evs := startBackground(t, map[string]Spec{"hang": hang, "fine": fine})
	if d := time.Since(begin); d > 500*time.Millisecond {
		t.Errorf("Start took %s with Background set", d)
	}
	if ev := evs.wait(t, EventConnected, 10*time.Second); ev.Server != "fine" {
		t.Errorf("connected %q, want fine", ev.Server)
	}
	if _, err := pool.Call(t.Context(), "fine", nil, mcp.CallToolParams{Name: "tool0"}); err != nil {
		t.Errorf("calling the server that is up while the other hangs: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if err := pool.WaitStarted(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitStarted = %v while a server is still on its first attempt", err)
	}
}

func TestCallWaitsForAServerStillStarting(t *testing.T) {
	t.Parallel()
	slow, _ := faulty(t, "slow-init=1s")
	pool, _ := startBackground(t, map[string]Spec{"slow": slow})
	begin := time.Now()
	raw, err := pool.Call(t.Context(), "slow", nil, mcp.CallToolParams{Name: "tool0", Arguments: map[string]any{"text": "waited"}})
	if err != nil {
		t.Fatalf("a call to a server still starting failed instead of waiting: %v", err)
	}
	if got := firstText(t, raw); got != "waited" {
		t.Errorf("result %q", got)
	}
	t.Logf("the call waited %s for the server to start", time.Since(begin).Round(time.Millisecond))
	if err := pool.WaitStarted(t.Context()); err != nil {
		t.Errorf("WaitStarted after the server came up: %v", err)
	}
}

func TestCallToAServerThatNeverAnswersSaysItIsStillStarting(t *testing.T) {
	t.Parallel()
	hang, _ := faulty(t, "hang-init")
	hang.InitTimeout = 30 * time.Second
	hang.CallTimeout = 300 * time.Millisecond
	pool, _ := startBackground(t, map[string]Spec{"hang": hang})
	begin := time.Now()
	_, err := pool.Call(t.Context(), "hang", nil, mcp.CallToolParams{Name: "tool0"})
	var serr *StartingError
	if !errors.As(err, &serr) || !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), `upstream "hang" is still starting`) {
		t.Fatalf("err = %v, want a still-starting error wrapping ErrUnavailable", err)
	}
	if d := time.Since(begin); d > 2*time.Second {
		t.Errorf("the call waited %s with a call_timeout of 300ms", d)
	}
}

func TestCallDuringBackoffFailsFast(t *testing.T) {
	t.Parallel()
	spec := Spec{Transport: TransportStdio, Command: "/nonexistent/mcp-server"}
	pool, evs := startBackground(t, map[string]Spec{"gone": spec})
	evs.wait(t, EventFailed, 10*time.Second)
	begin := time.Now()
	_, err := pool.Call(t.Context(), "gone", nil, mcp.CallToolParams{Name: "tool0"})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if d := time.Since(begin); d > 100*time.Millisecond {
		t.Errorf("a call between attempts took %s, want it to fail fast", d)
	}
}
