package approvals

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/state"
)

// waitPending waits until b lists n pending asks and returns them.
func waitPending(t *testing.T, b *Broker, n int) []Pending {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s, changed := b.Snapshot()
		if len(s.Pending) == n {
			return s.Pending
		}
		if time.Now().After(deadline) {
			t.Fatalf("pending asks = %d, want %d", len(s.Pending), n)
		}
		select {
		case <-changed:
		case <-time.After(100 * time.Millisecond):
		}
	}
}

type result struct {
	d   Decision
	err error
}

func resolveAsync(ctx context.Context, r Resolver, req Request) <-chan result {
	ch := make(chan result, 1)
	go func() {
		d, err := r.Resolve(ctx, req)
		ch <- result{d, err}
	}()
	return ch
}

func TestDecideAnswersThePendingAsk(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		answer state.Answer
		via    Via
	}{
		{"allow once from the page", state.AllowOnce, ViaPage},
		{"allow for the session from the CLI", state.AllowSession, ViaCLI},
		{"deny from the page", state.Deny, ViaPage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				b := NewBroker(nil)
				defer b.Close()
				got := resolveAsync(t.Context(), b, Request{ID: "abc", Tool: "mcp:fs:write_file", Arguments: map[string]any{"path": "/x"}})
				p := waitPending(t, b, 1)
				if p[0].ID != "abc" || p[0].Tool != "mcp:fs:write_file" {
					t.Fatalf("pending = %+v", p[0])
				}
				if err := b.Decide("abc", tt.answer, tt.via, "tester"); err != nil {
					t.Fatal(err)
				}
				r := <-got
				if r.err != nil || r.d != (Decision{Answer: tt.answer, Via: tt.via, Who: "tester"}) {
					t.Errorf("Resolve = %+v, %v", r.d, r.err)
				}
				s, _ := b.Snapshot()
				if len(s.Pending) != 0 || len(s.Recent) != 1 || s.Recent[0].Outcome != tt.answer.String() || s.Recent[0].Via != tt.via {
					t.Errorf("after deciding: %+v", s)
				}
				if s.Recent[0].Arguments != nil {
					t.Errorf("the history keeps the arguments: %v", s.Recent[0].Arguments)
				}
				if err := b.Decide("abc", state.AllowOnce, ViaPage, ""); !errors.Is(err, ErrUnknownAsk) {
					t.Errorf("a second answer to the same ask: %v, want ErrUnknownAsk", err)
				}
			})
		})
	}
}

func TestUnansweredAskTimesOut(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := NewBroker(nil)
		defer b.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		d, err := b.Resolve(ctx, Request{Tool: "mcp:fs:write_file"})
		if !errors.Is(err, context.DeadlineExceeded) || d.Answer != state.Deny {
			t.Fatalf("Resolve = %+v, %v; want Deny, DeadlineExceeded", d, err)
		}
		s, _ := b.Snapshot()
		if len(s.Pending) != 0 || len(s.Recent) != 1 || s.Recent[0].Outcome != OutcomeTimeout {
			t.Errorf("after the timeout: %+v", s)
		}
	})
}

func TestCloseDeniesPendingAsks(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := NewBroker(nil)
		got := resolveAsync(t.Context(), b, Request{})
		waitPending(t, b, 1)
		b.Close()
		b.Close() // idempotent
		if r := <-got; !errors.Is(r.err, ErrClosed) || r.d.Answer != state.Deny {
			t.Errorf("pending ask at Close: %+v, %v", r.d, r.err)
		}
		if _, err := b.Resolve(t.Context(), Request{}); !errors.Is(err, ErrClosed) {
			t.Errorf("ask after Close: %v", err)
		}
	})
}

func TestTooManyPendingAsksAreRefused(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := NewBroker(&BrokerOptions{MaxPending: 1})
		defer b.Close()
		resolveAsync(t.Context(), b, Request{})
		waitPending(t, b, 1)
		if _, err := b.Resolve(t.Context(), Request{}); !errors.Is(err, ErrFull) {
			t.Errorf("second ask: %v, want ErrFull", err)
		}
	})
}

func TestHistoryKeepsTheLastN(t *testing.T) {
	t.Parallel()
	b := NewBroker(&BrokerOptions{History: 2})
	defer b.Close()
	for _, id := range []string{"a", "b", "c"} {
		got := resolveAsync(t.Context(), b, Request{ID: id})
		waitPending(t, b, 1)
		if err := b.Decide(id, state.Deny, ViaCLI, ""); err != nil {
			t.Fatal(err)
		}
		<-got
	}
	s, _ := b.Snapshot()
	if len(s.Recent) != 2 || s.Recent[0].ID != "c" || s.Recent[1].ID != "b" {
		t.Errorf("recent = %+v, want c, b", s.Recent)
	}
}

func TestWhereHoldsNoToken(t *testing.T) {
	t.Parallel()
	b := NewBroker(&BrokerOptions{URL: "http://127.0.0.1:8766/"})
	got := b.Where("abc")
	for _, want := range []string{"http://127.0.0.1:8766/", "mcpwarden approve abc"} {
		if !strings.Contains(got, want) {
			t.Errorf("Where = %q, lacks %q", got, want)
		}
	}
	if strings.Contains(got, "token=") {
		t.Errorf("Where = %q shows a token", got)
	}
}

func TestParseAnswerRefusesUnknownDecisions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want state.Answer
		ok   bool
	}{
		{`{"decision":"allow_once"}`, state.AllowOnce, true},
		{`{"decision":"allow_session"}`, state.AllowSession, true},
		{`{"decision":"deny"}`, state.Deny, true},
		{`{"decision":"deny_session"}`, state.Deny, false}, // the client form's answer alone
		{`{"decision":"none"}`, state.Deny, false},
		{`{"decision":"ALLOW_ONCE"}`, state.Deny, false},
		{`{"decision":"yes"}`, state.Deny, false},
		{`{}`, state.Deny, false},
		{`{"decision":"allow_once"} trailing`, state.Deny, false},
		{`allow_once`, state.Deny, false},
		{``, state.Deny, false},
	}
	for _, tt := range tests {
		got, err := parseAnswer([]byte(tt.in))
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("parseAnswer(%q) = %v, %v; want %v, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}
