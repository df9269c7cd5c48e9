package ask

import (
	"fmt"
	"testing"

	"github.com/mcpwarden/mcpwarden/internal/state"
)

func TestScopeCoversOnlyWhatWasGranted(t *testing.T) {
	t.Parallel()
	file := func(forms ...string) Target {
		return Target{Earns: true, Paths: forms[:1], Forms: forms, Folders: []string{"/srv/app/docs"}}
	}
	pathless := Target{Pathless: true, Earns: true}
	malformed := Target{Earns: false}
	tests := []struct {
		name    string
		granted Target
		answer  state.Answer
		later   Target
		want    bool
	}{
		{"a pathless grant covers a pathless call", pathless, state.AllowSession, pathless, true},
		{"a pathless grant does not cover a call with a path", pathless, state.AllowSession, file("/srv/app/docs/a.txt"), false},
		{"a pathless grant does not cover a malformed path", pathless, state.AllowSession, malformed, false},
		{"a malformed path earns no grant", malformed, state.AllowSession, malformed, false},
		{"a malformed path earns no folder grant", malformed, state.AllowFolder, pathless, false},
		{"an exact grant covers the same path", file("/srv/app/docs/a.txt"), state.AllowSession, file("/srv/app/docs/a.txt"), true},
		{"an exact grant does not cover a sibling", file("/srv/app/docs/a.txt"), state.AllowSession, file("/srv/app/docs/b.txt"), false},
		{"an exact grant does not cover a path beneath it", file("/srv/app/docs"), state.AllowSession, file("/srv/app/docs/x"), false},
		{"an exact grant does not cover the path once it is a link out", file("/srv/app/docs/a.txt"), state.AllowSession, file("/srv/app/docs/a.txt", "/etc/passwd"), false},
		{"a folder grant covers a sibling", file("/srv/app/docs/a.txt"), state.AllowFolder, file("/srv/app/docs/b.txt"), true},
		{"a folder grant covers a file deeper down", file("/srv/app/docs/a.txt"), state.AllowFolder, file("/srv/app/docs/x/y.txt"), true},
		{"a folder grant does not cover a link out of it", file("/srv/app/docs/a.txt"), state.AllowFolder, file("/srv/app/docs/link/s.txt", "/srv/secret/s.txt"), false},
		{"a folder grant does not cover a neighbour with the same prefix", file("/srv/app/docs/a.txt"), state.AllowFolder, file("/srv/app/docsx/a.txt"), false},
		{"a folder grant does not cover a pathless call", file("/srv/app/docs/a.txt"), state.AllowFolder, pathless, false},
		{"a folder grant does not cover a malformed path", file("/srv/app/docs/a.txt"), state.AllowFolder, malformed, false},
		{"a session deny covers every call of the tool", file("/srv/app/docs/a.txt"), state.DenySession, pathless, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := ScopeFor(tt.granted, tt.answer).Covers(tt.later); got != tt.want {
				t.Errorf("covers = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAskEnumsHaveTheirNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		got  fmt.Stringer
		want string
	}{
		{"a scope kind", ScopeUnder, "under"},
		{"a scope kind no constant names", ScopeKind(200), "ScopeKind(200)"},
		{"a result outcome", ResultRedacted, "redacted"},
		{"the zero result outcome withholds", ResultOutcome(0), "withheld"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.got.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}
