package app

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mcpwarden/mcpwarden/audit"
)

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// recordAsked writes to the audit log at path n decision events of
// mcp:up:echo asked by default, as a running proxy would have.
func recordAsked(t *testing.T, path string, n int) {
	t.Helper()
	l, err := audit.Open(audit.Config{Path: path, Unsigned: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range n {
		e := audit.Event{Event: audit.KindDecision, Server: "up", Method: "tools/call", Tool: "mcp:up:echo", Decision: audit.DecisionAsk,
			Rule: "default", GrantedBy: audit.GrantedByUserOnce, Outcome: audit.OutcomeAllowed, Arguments: map[string]any{"text": "hi"}}
		if err := l.Write(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// policyEvents returns the policy_changed events of the log at path.
func policyEvents(t *testing.T, path string) []audit.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []audit.Event
	_, err = audit.ReadEvents(f, func(_ int, _ []byte, e audit.Event, err error) error {
		if err == nil && e.Event == audit.KindPolicyChanged {
			out = append(out, e)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReloadThatWidensThePolicyWarnsAndIsAudited: a reload of a running
// mcpwarden that allows what the old policy asked about logs a warning
// with examples and records a policy_changed event naming both policies,
// which verifies and shows in audit tail; a reload that changes only the
// servers records nothing.
func TestReloadThatWidensThePolicyWarnsAndIsAudited(t *testing.T) {
	t.Parallel()
	url := standIn(t)
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	recordAsked(t, log, 4)
	base := "servers:\n  up:\n    url: " + url + "\naudit:\n  path: " + log + "\n  unsigned: true\n"
	st := setupOf(t, base+"policy:\n  default: ask\n")
	var logged syncBuffer
	a, err := Start(t.Context(), st, Options{Version: "test", Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()

	wider := setupOf(t, base+"policy:\n  default: ask\n  allow: [\"mcp:up:*\"]\n")
	if err := a.Reload(t.Context(), wider); err != nil {
		t.Fatal(err)
	}
	if got := logged.String(); !strings.Contains(got, "allows requests the old one refused") || !strings.Contains(got, "widened=4") || !strings.Contains(got, `mcp:up:echo {\"text\":\"hi\"}: ask (default) → allow (mcp:up:*)`) {
		t.Errorf("log after a widening reload:\n%s\nwant a warning with the count and an example", got)
	}
	events := policyEvents(t, log)
	if len(events) != 1 {
		t.Fatalf("policy_changed events = %d, want 1", len(events))
	}
	e := events[0]
	if e.PolicySHA256 != wider.Policy.SHA256() || e.PreviousPolicySHA256 != st.Policy.SHA256() || e.Changed != 4 || e.Widened != 4 {
		t.Errorf("policy_changed = %+v, want the new and old hashes, 4 changed and 4 widened", e)
	}
	if got := audit.Format(e); !strings.Contains(got, "policy_changed changed=4 widened=4 policy="+e.PolicySHA256) {
		t.Errorf("audit tail shows %q", got)
	}

	// Narrowing again changes 4 decisions and widens none: no warning.
	before := logged.String()
	if err := a.Reload(t.Context(), setupOf(t, base+"policy:\n  default: deny\n")); err != nil {
		t.Fatal(err)
	}
	if after := strings.TrimPrefix(logged.String(), before); strings.Contains(after, "allows requests") {
		t.Errorf("a narrowing reload warned:\n%s", after)
	}
	// Reloading the same policy records nothing.
	if err := a.Reload(t.Context(), setupOf(t, base+"policy:\n  default: deny\n")); err != nil {
		t.Fatal(err)
	}
	events = policyEvents(t, log)
	if len(events) != 2 || events[1].Changed != 4 || events[1].Widened != 0 {
		t.Fatalf("policy_changed events = %+v, want a second one with 4 changed, none widened, and no third", events)
	}
	a.Close()
	if _, err := audit.Verify(log); err != nil {
		t.Errorf("audit verify after the reloads: %v", err)
	}
}
