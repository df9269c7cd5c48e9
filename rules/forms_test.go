package rules

import (
	"errors"
	"strings"
	"testing"
)

func TestFileURIReachesDeny(t *testing.T) {
	t.Parallel()
	p := mustCompile(t, Spec{
		Global:  PolicySpec{Deny: []string{"mcp:fs:*:path=/etc/**", "mcp:*:*:@path=**/.env"}, Allow: []string{"mcp:fs:*:path=/srv/**", "mcp:fs:*"}},
		Servers: map[string]ServerSpec{"fs": {Root: "/srv/app"}},
	})
	runSecurity(t, p, "fs", "read_file", []securityCase{
		{name: "a file URI", args: map[string]any{"path": "file:///etc/passwd"}, want: Deny},
		{name: "a file URI naming localhost", args: map[string]any{"path": "file://localhost/etc/passwd"}, want: Deny},
		{name: "a file URI without a host part", args: map[string]any{"path": "file:/etc/passwd"}, want: Deny},
		{name: "an upper-case scheme", args: map[string]any{"path": "FILE:///etc/passwd"}, want: Deny},
		{name: "a percent-encoded name", args: map[string]any{"path": "file:///%65tc/passwd"}, want: Deny},
		{name: "percent-encoded dot-dots", args: map[string]any{"path": "file:///srv/%2e%2e/etc/passwd"}, want: Deny},
		{name: "a percent-encoded NUL", args: map[string]any{"path": "file:///etc/passwd%00/../../srv/x"}, want: Deny},
		{name: "a file URI with a host a naive server strips", args: map[string]any{"path": "file://etc/passwd"}, want: Deny},
		{name: "a file URI with a host, relative to the root", args: map[string]any{"path": "file://../../etc/passwd"}, want: Deny},
		{name: "a file URI inside the allowed tree", args: map[string]any{"path": "file:///srv/app/a.txt"}, want: Allow},
	})
	runSecurity(t, p, "fs", "resources/read", []securityCase{
		{name: "a file URI at a URL-like key is a path for @path", args: map[string]any{"uri": "file:///srv/app/.env"}, want: Deny},
		{name: "an https URI is not a path", args: map[string]any{"uri": "https://example.com/.env"}, want: Allow},
	})
}

func TestTildeReachesDeny(t *testing.T) {
	t.Parallel()
	p := mustCompile(t, Spec{
		Global: PolicySpec{
			Deny:  []string{"mcp:*:*:@path=/home/u/.ssh/**", "mcp:*:*:@path=/root/**"},
			Allow: []string{"mcp:*:*:@path=/home/u/**"},
		},
		Servers: map[string]ServerSpec{"fs": {Root: "/home/u", Home: "/home/u"}, "remote": {}},
	})
	runSecurity(t, p, "fs", "read_file", []securityCase{
		{name: "a home key file", args: map[string]any{"path": "~/.ssh/id_rsa"}, want: Deny},
		{name: "a home key file with dot-dots", args: map[string]any{"path": "~/x/../.ssh/id_rsa"}, want: Deny},
		{name: "another user's home", args: map[string]any{"path": "~root/.bashrc"}, want: Deny},
		{name: "a HOME variable a server may expand", args: map[string]any{"path": "$HOME/.ssh/id_rsa"}, want: Deny},
		{name: "a braced HOME variable", args: map[string]any{"path": "${HOME}/.ssh/id_rsa"}, want: Deny},
		{name: "a home file both readings of which are allowed", args: map[string]any{"path": "~/notes.txt"}, want: Allow},
		{name: "a home escaping with dot-dots", args: map[string]any{"path": "~/../../etc/passwd"}, want: Ask},
	})
	runSecurity(t, p, "remote", "read_file", []securityCase{
		{name: "a home key file without a known home", args: map[string]any{"path": "~/.ssh/id_rsa"}, want: Ask},
		{name: "a home file without a known home is never allowed", args: map[string]any{"path": "~/notes.txt"}, want: Ask},
	})
	q := mustCompile(t, Spec{
		Global:  PolicySpec{Deny: []string{"mcp:*:*:@path=**/.ssh/**"}, Allow: []string{"mcp:*:*"}},
		Servers: map[string]ServerSpec{"remote": {}},
	})
	runSecurity(t, q, "remote", "read_file", []securityCase{
		{name: "a guess without a home still meets a deny", args: map[string]any{"path": "~/.ssh/id_rsa"}, want: Deny},
	})
}

func TestNFDSpellingReachesDeniedDir(t *testing.T) {
	t.Parallel()
	p := mustCompile(t, global(PolicySpec{
		Deny:  []string{"mcp:fs:*:path=/srv/caf\u00e9/**", "mcp:fs:*:path=/srv/nai\u0308ve/**"},
		Allow: []string{"mcp:fs:*:path=/srv/**"},
	}))
	runSecurity(t, p, "fs", "read_file", []securityCase{
		{name: "a decomposed spelling of a composed deny", args: map[string]any{"path": "/srv/cafe\u0301/menu"}, want: Deny},
		{name: "the composed spelling of a decomposed deny", args: map[string]any{"path": "/srv/na\u00efve/x"}, want: Deny},
		{name: "the decomposed spelling of a decomposed deny", args: map[string]any{"path": "/srv/nai\u0308ve/x"}, want: Deny},
		{name: "another name", args: map[string]any{"path": "/srv/cafe/menu"}, want: Allow},
	})
}

func TestKelvinSignReachesDeniedDir(t *testing.T) {
	t.Parallel()
	// U+212A KELVIN SIGN is canonically equivalent to K: its NFC form is K.
	p := mustCompile(t, global(PolicySpec{
		Deny:  []string{"mcp:fs:*:path=/srv/Keys/**"},
		Allow: []string{"mcp:fs:*:path=/srv/**"},
	}))
	runSecurity(t, p, "fs", "read_file", []securityCase{
		{name: "a KELVIN SIGN for K", args: map[string]any{"path": "/srv/\u212aeys/id"}, want: Deny},
		{name: "an ANGSTROM SIGN is not K", args: map[string]any{"path": "/srv/\u212beys/id"}, want: Allow},
	})
}

func TestUpperCaseEnvOnCaseInsensitiveHost(t *testing.T) {
	t.Parallel()
	spec := Spec{
		Global: PolicySpec{
			Deny:      []string{"mcp:*:*:@path=**/.env", "mcp:*:*:@path~=.*\\.pem", "mcp:*:*:@path=**/.secrets/**"},
			Allow:     []string{"mcp:*:*"},
			Workspace: []string{"/srv/app"}, OutsideWorkspace: "deny",
		},
		PathsCaseInsensitive: true,
	}
	p := mustCompile(t, spec)
	runSecurity(t, p, "fs", "read_file", []securityCase{
		{name: "an upper-case .ENV", args: map[string]any{"path": "/srv/app/.ENV"}, want: Deny},
		{name: "a mixed-case .Env", args: map[string]any{"path": "/srv/app/.Env"}, want: Deny},
		{name: "an upper-case key file under a regexp", args: map[string]any{"path": "/srv/app/KEY.PEM"}, want: Deny},
		{name: "an upper-case workspace spelling is inside", args: map[string]any{"path": "/SRV/App/a.txt"}, want: Allow},
		{name: "outside stays outside", args: map[string]any{"path": "/etc/passwd"}, want: Deny},
		{name: "a long s folds to s", args: map[string]any{"path": "/srv/app/.\u017fecrets/x"}, want: Deny},
		{name: "a dotted capital I is not i, so it is not inside /srv/app/i", args: map[string]any{"path": "/srv/app/\u0130"}, want: Allow},
	})
	r := mustCompile(t, Spec{Global: PolicySpec{Allow: []string{"mcp:fs:*:path=/srv/i/**"}}, PathsCaseInsensitive: true})
	runSecurity(t, r, "fs", "read_file", []securityCase{
		{name: "an allow on i does not cover a dotted capital I", args: map[string]any{"path": "/srv/\u0130/x"}, want: Ask},
		{name: "an allow on i covers I", args: map[string]any{"path": "/srv/I/x"}, want: Allow},
	})
	spec.PathsCaseInsensitive = false
	q := mustCompile(t, spec)
	runSecurity(t, q, "fs", "read_file", []securityCase{
		{name: "a case-sensitive host reads .ENV as another file", args: map[string]any{"path": "/srv/app/.ENV"}, want: Allow},
		{name: "a case-sensitive host reads /SRV as another directory", args: map[string]any{"path": "/SRV/app/a"}, want: Deny},
	})
}

func TestAtPathCoversEveryPathLikeValue(t *testing.T) {
	t.Parallel()
	// read_multiple_files {"paths":[".env",".git/config"]} returned both
	// files while the deny was only on path.
	p := mustCompile(t, Spec{
		Global: PolicySpec{
			Deny:  []string{"mcp:*:*:@path=**/.env", "mcp:*:*:@path=**/.git/**", "mcp:*:*:@path=**/*.pem"},
			Allow: []string{"mcp:fs:read_*", "mcp:fs:copy:@path=/srv/app/**"},
		},
		Servers: map[string]ServerSpec{"fs": {Root: "/srv/app"}},
	})
	runSecurity(t, p, "fs", "read_multiple_files", []securityCase{
		{name: "an array of relative secrets", args: map[string]any{"paths": []any{".env", ".git/config"}}, want: Deny},
		{name: "one secret among plain files", args: map[string]any{"paths": []any{"a.txt", "certs/key.pem"}}, want: Deny},
		{name: "a secret nested in an object", args: map[string]any{"edits": []any{map[string]any{"file_path": "/srv/app/.env"}}}, want: Deny},
		{name: "a secret under an upper-case key", args: map[string]any{"FILES": []any{".env"}}, want: Deny},
		{name: "plain files", args: map[string]any{"paths": []any{"a.txt", "b.txt"}}, want: Allow},
	})
	runSecurity(t, p, "fs", "copy", []securityCase{
		{name: "every path inside", args: map[string]any{"source": "a", "destination": "b"}, want: Allow},
		{name: "one path outside", args: map[string]any{"source": "a", "dest": "/etc/x"}, want: Ask},
		{name: "no paths at all", args: map[string]any{"n": 1}, want: Ask},
		{name: "a non-string path", args: map[string]any{"source": "a", "target": 7}, want: Ask},
	})
}

func TestAtPathAllowOverridesWorkspace(t *testing.T) {
	t.Parallel()
	p := mustCompile(t, global(PolicySpec{
		Allow:     []string{"mcp:fs:read_*:@path=/usr/share/**", "mcp:fs:*"},
		Workspace: []string{"/srv/app"}, OutsideWorkspace: "deny",
	}))
	runSecurity(t, p, "fs", "read_file", atPathCases())
}

func atPathCases() []securityCase {
	return []securityCase{
		{name: "an allow on @path vouches for every path", args: map[string]any{"paths": []any{"/usr/share/a", "/usr/share/b"}}, want: Allow},
		{name: "not for a path it does not match", args: map[string]any{"paths": []any{"/usr/share/a", "/etc/passwd"}}, want: Deny},
	}
}

func TestDeadPathPatternsAreLoadErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, rule string
		wantCol    int
		wantFix    string
	}{
		{"a doubled equals sign", "mcp:fs:*:path==/root/**", 15, `write "/root/**"`},
		{"a leading space", "mcp:fs:*:path= /etc/**", 15, `write "/etc/**"`},
		{"a bare file name", "mcp:fs:*:path=.env", 15, `write "**/.env"`},
		{"a relative directory", "mcp:fs:*:path=secrets/**", 15, `write "**/secrets/**"`},
		{"a lone star", "mcp:fs:*:path=*", 15, `write "**"`},
		{"a star-dot extension on @path", "mcp:*:*:@path=*.pem", 15, `write "**/*.pem"`},
		{"a negated relative pattern", "mcp:fs:*:path!=src/**", 16, `write "**/src/**"`},
		{"a relative brace alternative", "mcp:fs:*:path={/etc/**,.env}", 15, `write "**/.env"`},
		{"a home pattern", "mcp:fs:*:path=~/.ssh/**", 15, "not expanded"},
		{"an empty pattern", "mcp:fs:*:file_path=", 20, `write "**"`},
		{"a wider path key", "mcp:fs:*:target=.env", 17, `write "**/.env"`},
		{"a regexp that starts with a name", "mcp:fs:*:path~=\\.env", 16, `write ".*/\\.env"`},
		{"a regexp that starts with a relative directory", "mcp:*:*:@path~=secrets/.*", 16, "no absolute path does"},
		{"an unknown fact", "mcp:fs:*:@labels=x", 10, "unknown fact"},
		{"a fact with a segment", "mcp:fs:*:@path.x=/a", 10, "unknown fact"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Compile(global(PolicySpec{Deny: []string{tt.rule}}))
			re, ok := errors.AsType[*RuleError](err)
			if !ok {
				t.Fatalf("Compile(%q) = %v, want a *RuleError", tt.rule, err)
			}
			if re.Column != tt.wantCol || !strings.Contains(re.Msg, tt.wantFix) {
				t.Errorf("Compile(%q) = column %d %q, want column %d and %q", tt.rule, re.Column, re.Msg, tt.wantCol, tt.wantFix)
			}
		})
	}
	for _, ok := range []string{
		"mcp:fs:*:path=**/.env", "mcp:fs:*:path=/etc/**", "mcp:fs:*:path={/etc/**,**/.env}", "mcp:fs:*:@path=**",
		"mcp:fs:*:path~=.*\\.env", "mcp:fs:*:path~=/etc/.*", "mcp:fs:*:path~=(?i).*\\.pem", "mcp:fs:*:name~=\\.env", "mcp:fs:*:name=.env", "mcp:fs:*:@readOnly=true", "mcp:fs:*:@principal=alice",
	} {
		if _, err := Compile(global(PolicySpec{Deny: []string{ok}})); err != nil {
			t.Errorf("Compile(%q) = %v, want no error", ok, err)
		}
	}
}

func TestFactsComeFromTheCall(t *testing.T) {
	t.Parallel()
	p := mustCompile(t, global(PolicySpec{
		Deny:  []string{"mcp:*:*:@destructive=true", "mcp:*:*:@principal=mallory"},
		Ask:   []string{"mcp:*:*:@openWorld!=false"},
		Allow: []string{"mcp:*:*:@readOnly=true", "mcp:*:*:@profile=ci"},
	}))
	tests := []struct {
		name string
		call Call
		want Decision
	}{
		{"a pinned read-only closed tool is allowed", Call{Server: "s", Tool: "t", Facts: Facts{ReadOnly: HintTrue, OpenWorld: HintFalse}}, Allow},
		{"a pinned destructive tool is denied", Call{Server: "s", Tool: "t", Facts: Facts{Destructive: HintTrue, ReadOnly: HintTrue}}, Deny},
		{"an unpinned tool has no facts and is asked", Call{Server: "s", Tool: "t"}, Ask},
		{"a read-only open-world tool is asked", Call{Server: "s", Tool: "t", Facts: Facts{ReadOnly: HintTrue, OpenWorld: HintTrue}}, Ask},
		{"a denied principal", Call{Server: "s", Tool: "t", Principal: "mallory", Facts: Facts{ReadOnly: HintTrue, OpenWorld: HintFalse}}, Deny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := p.Decide(tt.call); got.Decision != tt.want {
				t.Errorf("Decide = %v by %q (%s), want %v", got.Decision, got.Rule, got.Reason, tt.want)
			}
		})
	}
}

func TestLintAndExplainTakeFacts(t *testing.T) {
	t.Parallel()
	p := mustCompile(t, Spec{
		Global:  PolicySpec{Deny: []string{"mcp:fs:*:@path=**/.env", "mcp:fs:*:@readOnly!=true"}, Allow: []string{"mcp:fs:*:@path=/srv/**"}},
		Servers: map[string]ServerSpec{"fs": {Root: "/srv"}},
	})
	p.Lint([]ToolInfo{{Server: "fs", Name: "read_file", Optional: []string{"path"}}})
	c := Call{Server: "fs", Tool: "read_file", Arguments: map[string]any{"paths": []any{"a", ".env"}}, Facts: Facts{ReadOnly: HintTrue}}
	ex := p.Explain(c)
	if ex.Verdict.Decision != Deny || !strings.Contains(ex.Verdict.Reason, `@path="/srv/.env"`) {
		t.Errorf("Explain = %+v, want a deny naming @path=\"/srv/.env\"", ex.Verdict)
	}
}
