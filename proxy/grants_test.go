package proxy

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/argview"
	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/internal/state/memory"
	"github.com/mcpwarden/mcpwarden/internal/textcut"
	"github.com/mcpwarden/mcpwarden/proxy/ask"
	"github.com/mcpwarden/mcpwarden/rules"
)

func TestGrantIsBoundToPrincipal(t *testing.T) {
	t.Parallel()
	a := &ask.Asker{Keep: newSessionState(nil).keeper()} // the embedded store
	sess := a.Waiting.Session("shared-session-id")
	alice := ask.GrantKey{Principal: "token:aaaa", Tool: "mcp:fs:write_file", Rule: "mcp:fs:write_file"}
	mallory := alice
	mallory.Principal = "token:bbbb"
	call := ask.Target{Paths: []string{"/srv/app/a.txt"}, Forms: []string{"/srv/app/a.txt"}, Folders: []string{"/srv/app"}, Earns: true}
	if err := a.Keep.Remember(t.Context(), sess, "shared-session-id", alice, state.AllowSession, ask.ScopeFor(call, state.AllowFolder)); err != nil {
		t.Fatal(err)
	}
	standing := func(id string, key ask.GrantKey) state.Answer {
		t.Helper()
		ans, err := a.Keep.Standing(t.Context(), id, key, call)
		if err != nil {
			t.Fatal(err)
		}
		return ans
	}
	if got := standing("shared-session-id", alice); got != state.AllowSession {
		t.Fatalf("the principal who was granted: %v, want the grant", got)
	}
	if got := standing("shared-session-id", mallory); got != state.None {
		t.Errorf("another principal on the same session id: %v, want no grant", got)
	}
	other := alice
	other.Rule = "mcp:fs:*"
	if got := standing("shared-session-id", other); got != state.None {
		t.Errorf("another rule: %v, want no grant", got)
	}
	if got := standing("other-session", alice); got != state.None {
		t.Errorf("another session: %v, want no grant", got)
	}
}

// FuzzFormCuts checks that the form's cuts never split a character, never
// lose the end they promise to keep, and state what they hid.
func FuzzFormCuts(f *testing.F) {
	for _, s := range []string{"", "short", strings.Repeat("é", 3000), strings.Repeat("a", 2001) + "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return
		}
		if got := argview.Cut(s, ask.MaxValueShown); !utf8.ValidString(got) || utf8.RuneCountInString(s) > ask.MaxValueShown && !strings.Contains(got, "more characters)") {
			t.Fatalf("argview.Cut(%d runes) = %q", utf8.RuneCountInString(s), got)
		}
		got := textcut.Tail(s, 40)
		if !utf8.ValidString(got) || utf8.RuneCountInString(got) > 40 || !strings.HasSuffix(s, strings.TrimPrefix(got, "…")) {
			t.Fatalf("textcut.Tail(%q) = %q", s, got)
		}
	})
}

// TestSessionGrantsEndWithTheSessionWithoutSharedState: without shared
// state the grants are kept in the embedded store, and the end of the
// session revokes them there (its unregister hook), so that a later
// session with the same ID (stdio's is always "stdio") is asked again.
func TestSessionGrantsEndWithTheSessionWithoutSharedState(t *testing.T) {
	t.Parallel()
	e := newEnv(t, rules.PolicySpec{Ask: []string{"mcp:up:write"}}, audit.Config{}, &memorySink{})
	a := e.srv.asker
	key := ask.GrantKey{Principal: PrincipalLocal, Tool: "mcp:up:write", Rule: "mcp:up:write"}
	call := ask.Target{Pathless: true, Earns: true}
	if err := a.Keep.Remember(t.Context(), a.Waiting.Session("s1"), "s1", key, state.AllowSession, ask.ScopeFor(call, state.AllowSession)); err != nil {
		t.Fatal(err)
	}
	if ans, err := a.Keep.Standing(t.Context(), "s1", key, call); err != nil || ans != state.AllowSession {
		t.Fatalf("standing before the session ended = %v, %v; want the grant", ans, err)
	}
	if err := e.srv.MCP().RegisterSession(t.Context(), idSession("s1")); err != nil {
		t.Fatal(err)
	}
	e.srv.MCP().UnregisterSession(t.Context(), "s1")
	if ans, err := a.Keep.Standing(t.Context(), "s1", key, call); err != nil || ans != state.None {
		t.Errorf("standing after the session ended = %v, %v; want none", ans, err)
	}
}

// TestSharedGrantsOutliveTheSessionsEndOnOneReplica: with shared state a
// session's end on one replica (the reaper's local end, say) leaves its
// grants to the other replicas; a DELETE revokes them everywhere.
func TestSharedGrantsOutliveTheSessionsEndOnOneReplica(t *testing.T) {
	t.Parallel()
	store := memory.New()
	t.Cleanup(func() { store.Close() })
	ss := newSessionState(store)
	a := &ask.Asker{Keep: ss.keeper()}
	key := ask.GrantKey{Principal: "alice", Tool: "mcp:up:write", Rule: "mcp:up:write"}
	call := ask.Target{Pathless: true, Earns: true}
	if err := a.Keep.Remember(t.Context(), a.Waiting.Session("s1"), "s1", key, state.AllowSession, ask.ScopeFor(call, state.AllowSession)); err != nil {
		t.Fatal(err)
	}
	ss.end("s1")
	if ans, err := a.Keep.Standing(t.Context(), "s1", key, call); err != nil || ans != state.AllowSession {
		t.Errorf("shared grant after the session ended on one replica = %v, %v; want it kept", ans, err)
	}
}
