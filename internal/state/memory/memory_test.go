package memory_test

import (
	"errors"
	"testing"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/internal/state/memory"
	"github.com/mcpwarden/mcpwarden/internal/state/statetest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	statetest.Run(t, func(t *testing.T) (state.Store, state.Store) {
		s := memory.New()
		t.Cleanup(func() { _ = s.Close() })
		return s, s
	})
}

func TestCloseEndsWaitAndRefusesCalls(t *testing.T) {
	t.Parallel()
	s := memory.New()
	if err := s.PublishAsk(t.Context(), state.Ask{ID: "a", AskedAt: time.Now()}, time.Minute); err != nil {
		t.Fatalf("PublishAsk: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.WaitAnswer(t.Context(), "a")
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := <-done; !errors.Is(err, state.ErrClosed) {
		t.Errorf("WaitAnswer across Close: %v, want ErrClosed", err)
	}
	if _, err := s.LoadSession(t.Context(), "x"); !errors.Is(err, state.ErrClosed) {
		t.Errorf("LoadSession after Close: %v, want ErrClosed", err)
	}
	if err := s.Check(t.Context()); !errors.Is(err, state.ErrClosed) {
		t.Errorf("Check after Close: %v, want ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close again: %v", err)
	}
}

func TestFloodOfTokensStopsAtTheStoresBound(t *testing.T) {
	t.Parallel()
	s := memory.New(memory.WithMaxTokens(2))
	t.Cleanup(func() { _ = s.Close() })
	for _, tok := range []string{"a", "b"} {
		if err := s.IssueToken(t.Context(), tok, []byte(`1`), time.Minute); err != nil {
			t.Fatalf("IssueToken %s: %v", tok, err)
		}
	}
	if err := s.IssueToken(t.Context(), "c", []byte(`1`), time.Minute); !errors.Is(err, state.ErrFull) {
		t.Fatalf("a third token past a bound of 2: %v, want ErrFull", err)
	}
	if n := s.HeldTokens(); n != 2 {
		t.Errorf("HeldTokens = %d, want 2", n)
	}
	// A consumed token frees its place, and so does an expired one.
	if _, err := s.ConsumeToken(t.Context(), "a"); err != nil {
		t.Fatalf("ConsumeToken: %v", err)
	}
	if err := s.IssueToken(t.Context(), "c", []byte(`1`), time.Millisecond); err != nil {
		t.Fatalf("a token after one was consumed: %v", err)
	}
	time.Sleep(5 * time.Millisecond)
	if err := s.IssueToken(t.Context(), "d", []byte(`1`), time.Minute); err != nil {
		t.Errorf("a token after one expired: %v", err)
	}
}
