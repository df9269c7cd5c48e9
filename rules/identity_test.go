package rules

import (
	"math"
	"testing"
)

func TestFoldedKeyDoesNotEscapeDeny(t *testing.T) {
	t.Parallel()
	// A Go server binds {"PATH": …} to its field path: a lone key in
	// another case is the key the deny is about.
	p := mustCompile(t, global(PolicySpec{
		Deny:  []string{"mcp:go:*:path=/etc/**"},
		Allow: []string{"mcp:go:*"},
	}))
	runSecurity(t, p, "go", "read", []securityCase{
		{name: "the key in upper case", args: map[string]any{"PATH": "/etc/passwd"}, want: Deny},
		{name: "the key in mixed case", args: map[string]any{"pAtH": "/etc/passwd"}, want: Deny},
		{name: "the key in upper case outside the denied tree", args: map[string]any{"PATH": "/srv/x"}, want: Allow},
		{name: "the key nested in mixed case", args: map[string]any{"Opts": map[string]any{"Path": "/etc/shadow"}}, want: Allow},
	})
	q := mustCompile(t, global(PolicySpec{Deny: []string{"mcp:go:*:opts.path=/etc/**"}, Allow: []string{"mcp:go:*"}}))
	runSecurity(t, q, "go", "read", []securityCase{
		{name: "every segment of a dotted key folds", args: map[string]any{"OPTS": map[string]any{"Path": "/etc/shadow"}}, want: Deny},
	})
}

func TestLongSFoldedKeyDoesNotEscapeDeny(t *testing.T) {
	t.Parallel()
	// go__move {"source": …/app/a.txt, "ſource": /etc/shadow, …} is refused
	// by jsonargs; the lone ſource (U+017F folds to s) must still meet
	// the rules on source.
	p := mustCompile(t, global(PolicySpec{
		Deny:  []string{"mcp:go:move:source=/etc/**"},
		Allow: []string{"mcp:go:move:source=/srv/app/**:destination=/srv/app/**"},
	}))
	runSecurity(t, p, "go", "move", []securityCase{
		{name: "a lone long-s key", args: map[string]any{"\u017fource": "/etc/shadow", "destination": "/srv/app/x"}, want: Deny},
		{name: "a KELVIN SIGN in a key", args: map[string]any{"source": "/srv/app/a", "destination": "/srv/app/x", "\u212aey": 1}, want: Allow},
		{name: "a lone long-s key inside the allowed tree", args: map[string]any{"\u017fource": "/srv/app/a", "destination": "/srv/app/x"}, want: Allow},
		{name: "an upper-case destination outside", args: map[string]any{"source": "/srv/app/a", "DESTINATION": "/tmp/x"}, want: Ask},
	})
}

func TestFoldedPathKeyIsPathLike(t *testing.T) {
	t.Parallel()
	// A key that folds to a path-like key is path-like: it is confined to
	// the workspace and normalised.
	p := mustCompile(t, Spec{
		Global:  PolicySpec{Allow: []string{"mcp:go:*"}, Workspace: []string{"/srv/app"}, OutsideWorkspace: "deny"},
		Servers: map[string]ServerSpec{"go": {Root: "/srv/app"}},
	})
	runSecurity(t, p, "go", "read", []securityCase{
		{name: "an upper-case path outside the workspace", args: map[string]any{"PATH": "/etc/passwd"}, want: Deny},
		{name: "a file_path spelt filePath outside the workspace", args: map[string]any{"filePath": "../../etc/passwd"}, want: Deny},
		{name: "an upper-case path inside", args: map[string]any{"PATH": "a.txt"}, want: Allow},
	})
}

func TestEmptyPathArrayMatchesNotEqualDeny(t *testing.T) {
	t.Parallel()
	// An empty array is an absent key: a != deny matches it as it matches
	// an omitted key, and no allow condition is satisfied by it.
	p := mustCompile(t, global(PolicySpec{
		Deny:  []string{"mcp:fs:write_*:paths!=/srv/app/**"},
		Allow: []string{"mcp:fs:read_multiple_files:paths=/srv/app/**", "mcp:fs:write_*"},
	}))
	runSecurity(t, p, "fs", "write_many", []securityCase{
		{name: "an empty array", args: map[string]any{"paths": []any{}}, want: Deny},
		{name: "an array of empty arrays", args: map[string]any{"paths": []any{[]any{}}}, want: Deny},
		{name: "an omitted key", args: map[string]any{}, want: Deny},
		{name: "a path inside", args: map[string]any{"paths": []any{"/srv/app/a"}}, want: Allow},
	})
	runSecurity(t, p, "fs", "read_multiple_files", []securityCase{
		{name: "an empty array never satisfies the allow", args: map[string]any{"paths": []any{}}, want: Ask},
		{name: "an empty string list never satisfies the allow", args: map[string]any{"paths": []string{}}, want: Ask},
	})
}

func TestNegativeZeroMatchesZeroDeny(t *testing.T) {
	t.Parallel()
	p := mustCompile(t, global(PolicySpec{Deny: []string{"mcp:db:query:limit=0"}, Allow: []string{"mcp:db:*"}}))
	runSecurity(t, p, "db", "query", []securityCase{
		{name: "a json.Number -0", args: map[string]any{"limit": jsonNumber("-0")}, want: Deny},
		{name: "a json.Number -0.0", args: map[string]any{"limit": jsonNumber("-0.0")}, want: Deny},
		{name: "a json.Number -0e5", args: map[string]any{"limit": jsonNumber("-0e5")}, want: Deny},
		{name: "a json.Number 0E-3", args: map[string]any{"limit": jsonNumber("0E-3")}, want: Deny},
		{name: "a float64 negative zero", args: map[string]any{"limit": math.Copysign(0, -1)}, want: Deny},
		{name: "a float32 negative zero", args: map[string]any{"limit": float32(math.Copysign(0, -1))}, want: Deny},
		{name: "a one", args: map[string]any{"limit": jsonNumber("1")}, want: Allow},
	})
}
