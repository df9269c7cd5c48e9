package proxy

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/argview"
	"github.com/mcpwarden/mcpwarden/internal/state/memory"
	"github.com/mcpwarden/mcpwarden/internal/textcut"
	"github.com/mcpwarden/mcpwarden/rules"
)

func TestGrantIsBoundToPrincipal(t *testing.T) {
	t.Parallel()
	a := &asker{state: newSessionState(nil)} // the embedded store
	sess := a.grants.session("shared-session-id")
	alice := grantKey{principal: "token:aaaa", tool: "mcp:fs:write_file", rule: "mcp:fs:write_file"}
	mallory := alice
	mallory.principal = "token:bbbb"
	call := target{paths: []string{"/srv/app/a.txt"}, forms: []string{"/srv/app/a.txt"}, folders: []string{"/srv/app"}, earns: true}
	if err := a.remember(t.Context(), sess, "shared-session-id", alice, answerAllowSession, scopeFor(call, answerAllowFolder)); err != nil {
		t.Fatal(err)
	}
	standing := func(id string, key grantKey) answer {
		t.Helper()
		ans, err := a.standing(t.Context(), id, key, call)
		if err != nil {
			t.Fatal(err)
		}
		return ans
	}
	if got := standing("shared-session-id", alice); got != answerAllowSession {
		t.Fatalf("the principal who was granted: %v, want the grant", got)
	}
	if got := standing("shared-session-id", mallory); got != answerNone {
		t.Errorf("another principal on the same session id: %v, want no grant", got)
	}
	other := alice
	other.rule = "mcp:fs:*"
	if got := standing("shared-session-id", other); got != answerNone {
		t.Errorf("another rule: %v, want no grant", got)
	}
	if got := standing("other-session", alice); got != answerNone {
		t.Errorf("another session: %v, want no grant", got)
	}
}

func TestScopeCoversOnlyWhatWasGranted(t *testing.T) {
	t.Parallel()
	file := func(forms ...string) target {
		return target{earns: true, paths: forms[:1], forms: forms, folders: []string{"/srv/app/docs"}}
	}
	pathless := target{pathless: true, earns: true}
	malformed := target{earns: false}
	tests := []struct {
		name    string
		granted target
		answer  answer
		later   target
		want    bool
	}{
		{"a pathless grant covers a pathless call", pathless, answerAllowSession, pathless, true},
		{"a pathless grant does not cover a call with a path", pathless, answerAllowSession, file("/srv/app/docs/a.txt"), false},
		{"a pathless grant does not cover a malformed path", pathless, answerAllowSession, malformed, false},
		{"a malformed path earns no grant", malformed, answerAllowSession, malformed, false},
		{"a malformed path earns no folder grant", malformed, answerAllowFolder, pathless, false},
		{"an exact grant covers the same path", file("/srv/app/docs/a.txt"), answerAllowSession, file("/srv/app/docs/a.txt"), true},
		{"an exact grant does not cover a sibling", file("/srv/app/docs/a.txt"), answerAllowSession, file("/srv/app/docs/b.txt"), false},
		{"an exact grant does not cover a path beneath it", file("/srv/app/docs"), answerAllowSession, file("/srv/app/docs/x"), false},
		{"an exact grant does not cover the path once it is a link out", file("/srv/app/docs/a.txt"), answerAllowSession, file("/srv/app/docs/a.txt", "/etc/passwd"), false},
		{"a folder grant covers a sibling", file("/srv/app/docs/a.txt"), answerAllowFolder, file("/srv/app/docs/b.txt"), true},
		{"a folder grant covers a file deeper down", file("/srv/app/docs/a.txt"), answerAllowFolder, file("/srv/app/docs/x/y.txt"), true},
		{"a folder grant does not cover a link out of it", file("/srv/app/docs/a.txt"), answerAllowFolder, file("/srv/app/docs/link/s.txt", "/srv/secret/s.txt"), false},
		{"a folder grant does not cover a neighbour with the same prefix", file("/srv/app/docs/a.txt"), answerAllowFolder, file("/srv/app/docsx/a.txt"), false},
		{"a folder grant does not cover a pathless call", file("/srv/app/docs/a.txt"), answerAllowFolder, pathless, false},
		{"a folder grant does not cover a malformed path", file("/srv/app/docs/a.txt"), answerAllowFolder, malformed, false},
		{"a session deny covers every call of the tool", file("/srv/app/docs/a.txt"), answerDenySession, pathless, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := scopeFor(tt.granted, tt.answer).covers(tt.later); got != tt.want {
				t.Errorf("covers = %v, want %v", got, tt.want)
			}
		})
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
		if got := argview.Cut(s, maxValueShown); !utf8.ValidString(got) || utf8.RuneCountInString(s) > maxValueShown && !strings.Contains(got, "more characters)") {
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
	key := grantKey{principal: PrincipalLocal, tool: "mcp:up:write", rule: "mcp:up:write"}
	call := target{pathless: true, earns: true}
	if err := a.remember(t.Context(), a.grants.session("s1"), "s1", key, answerAllowSession, scopeFor(call, answerAllowSession)); err != nil {
		t.Fatal(err)
	}
	if ans, err := a.standing(t.Context(), "s1", key, call); err != nil || ans != answerAllowSession {
		t.Fatalf("standing before the session ended = %v, %v; want the grant", ans, err)
	}
	if err := e.srv.MCP().RegisterSession(t.Context(), idSession("s1")); err != nil {
		t.Fatal(err)
	}
	e.srv.MCP().UnregisterSession(t.Context(), "s1")
	if ans, err := a.standing(t.Context(), "s1", key, call); err != nil || ans != answerNone {
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
	a := &asker{state: newSessionState(store)}
	key := grantKey{principal: "alice", tool: "mcp:up:write", rule: "mcp:up:write"}
	call := target{pathless: true, earns: true}
	if err := a.remember(t.Context(), a.grants.session("s1"), "s1", key, answerAllowSession, scopeFor(call, answerAllowSession)); err != nil {
		t.Fatal(err)
	}
	a.state.end("s1")
	if ans, err := a.standing(t.Context(), "s1", key, call); err != nil || ans != answerAllowSession {
		t.Errorf("shared grant after the session ended on one replica = %v, %v; want it kept", ans, err)
	}
}
