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
