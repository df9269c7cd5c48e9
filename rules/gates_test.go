package rules

import "testing"

func TestGates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		spec     Spec
		call     Call
		want     Decision
		wantRule string
		wantGate string
	}{
		{
			name: "a server policy adds an allow to the global policy",
			spec: Spec{Servers: map[string]ServerSpec{"fs": {Policy: PolicySpec{Allow: []string{"mcp:fs:read_file"}}}}},
			call: Call{Server: "fs", Tool: "read_file"},
			want: Allow, wantRule: "mcp:fs:read_file", wantGate: "servers.fs.policy",
		},
		{
			name: "a global default deny is the fallback, not a veto of a server allow",
			spec: Spec{
				Global:  PolicySpec{Default: "deny"},
				Servers: map[string]ServerSpec{"fs": {Policy: PolicySpec{Allow: []string{"mcp:fs:read_file"}}}},
			},
			call: Call{Server: "fs", Tool: "read_file"},
			want: Allow, wantRule: "mcp:fs:read_file", wantGate: "servers.fs.policy",
		},
		{
			name: "a global deny beats a server allow",
			spec: Spec{
				Global:  PolicySpec{Deny: []string{"mcp:*:*:path=**/.env"}},
				Servers: map[string]ServerSpec{"fs": {Policy: PolicySpec{Allow: []string{"mcp:fs:*"}}}},
			},
			call: Call{Server: "fs", Tool: "read_file", Arguments: map[string]any{"path": "/srv/.env"}},
			want: Deny, wantRule: "mcp:*:*:path=**/.env", wantGate: "policy",
		},
		{
			name: "a server deny beats a global allow",
			spec: Spec{
				Global:  PolicySpec{Allow: []string{"mcp:fs:*"}},
				Servers: map[string]ServerSpec{"fs": {Policy: PolicySpec{Deny: []string{"mcp:fs:*:path=**/node_modules/**"}}}},
			},
			call: Call{Server: "fs", Tool: "read_file", Arguments: map[string]any{"path": "/a/node_modules/x"}},
			want: Deny, wantRule: "mcp:fs:*:path=**/node_modules/**", wantGate: "servers.fs.policy",
		},
		{
			name: "a server's explicit default is contributed when none of its rules matches",
			spec: Spec{
				Global:  PolicySpec{Allow: []string{"mcp:fs:*"}},
				Servers: map[string]ServerSpec{"fs": {Policy: PolicySpec{Default: "ask"}}},
			},
			call: Call{Server: "fs", Tool: "read_file"},
			want: Ask, wantRule: "default", wantGate: "servers.fs.policy",
		},
		{
			name: "a server gate without a default abstains",
			spec: Spec{
				Global:  PolicySpec{Allow: []string{"mcp:fs:*"}},
				Servers: map[string]ServerSpec{"fs": {Policy: PolicySpec{Deny: []string{"mcp:fs:delete"}}}},
			},
			call: Call{Server: "fs", Tool: "read_file"},
			want: Allow, wantRule: "mcp:fs:*", wantGate: "policy",
		},
		{
			name: "the server gate applies only to its own server",
			spec: Spec{
				Global:  PolicySpec{Allow: []string{"mcp:*:*"}},
				Servers: map[string]ServerSpec{"fs": {Policy: PolicySpec{Default: "deny"}}},
			},
			call: Call{Server: "git", Tool: "log"},
			want: Allow, wantRule: "mcp:*:*", wantGate: "policy",
		},
		{
			name: "a profile deny wins",
			spec: Spec{
				Global:   PolicySpec{Allow: []string{"mcp:fs:*"}},
				Profiles: map[string]PolicySpec{"ci": {Deny: []string{"mcp:fs:write_*"}}},
			},
			call: Call{Profile: "ci", Server: "fs", Tool: "write_file"},
			want: Deny, wantRule: "mcp:fs:write_*", wantGate: "profiles.ci",
		},
		{
			name: "a profile allow cannot widen the global default",
			spec: Spec{
				Profiles: map[string]PolicySpec{"ci": {Allow: []string{"mcp:fs:*"}}},
			},
			call: Call{Profile: "ci", Server: "fs", Tool: "write_file"},
			want: Ask, wantRule: "default", wantGate: "policy",
		},
		{
			name: "a profile allow cannot widen a global ask",
			spec: Spec{
				Global:   PolicySpec{Ask: []string{"mcp:fs:write_file"}},
				Profiles: map[string]PolicySpec{"ci": {Default: "allow", Allow: []string{"mcp:fs:*"}}},
			},
			call: Call{Profile: "ci", Server: "fs", Tool: "write_file"},
			want: Ask, wantRule: "mcp:fs:write_file", wantGate: "policy",
		},
		{
			name: "a profile default deny narrows an allow",
			spec: Spec{
				Global:   PolicySpec{Allow: []string{"mcp:fs:*"}},
				Profiles: map[string]PolicySpec{"ci": {Default: "deny", Allow: []string{"mcp:fs:read_*"}}},
			},
			call: Call{Profile: "ci", Server: "fs", Tool: "write_file"},
			want: Deny, wantRule: "default", wantGate: "profiles.ci",
		},
		{
			name: "a profile allow agrees with a global allow",
			spec: Spec{
				Global:   PolicySpec{Allow: []string{"mcp:fs:*"}},
				Profiles: map[string]PolicySpec{"ci": {Default: "deny", Allow: []string{"mcp:fs:read_*"}}},
			},
			call: Call{Profile: "ci", Server: "fs", Tool: "read_file"},
			want: Allow, wantRule: "mcp:fs:*", wantGate: "policy",
		},
		{
			name: "an unknown profile is denied",
			spec: Spec{Global: PolicySpec{Allow: []string{"mcp:*:*"}}},
			call: Call{Profile: "nope", Server: "fs", Tool: "read_file"},
			want: Deny, wantRule: "default", wantGate: "profiles.nope",
		},
		{
			name: "no profile means no profile gate",
			spec: Spec{
				Global:   PolicySpec{Allow: []string{"mcp:*:*"}},
				Profiles: map[string]PolicySpec{"ci": {Default: "deny"}},
			},
			call: Call{Server: "fs", Tool: "read_file"},
			want: Allow, wantRule: "mcp:*:*", wantGate: "policy",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := mustCompile(t, tt.spec).Decide(tt.call)
			if got.Decision != tt.want || got.Rule != tt.wantRule || got.Gate != tt.wantGate {
				t.Errorf("Decide = %v by %q in %q (%s), want %v by %q in %q", got.Decision, got.Rule, got.Gate, got.Reason, tt.want, tt.wantRule, tt.wantGate)
			}
		})
	}
}

func TestWorkspace(t *testing.T) {
	t.Parallel()
	confined := func(p PolicySpec) Spec {
		p.Workspace = []string{"/srv/app"}
		return Spec{Global: p, Servers: map[string]ServerSpec{"fs": {Root: "/srv/app"}}}
	}
	tests := []struct {
		name     string
		spec     Spec
		call     Call
		want     Decision
		wantRule string
	}{
		{
			name: "a path inside the workspace falls through to the rules",
			spec: confined(PolicySpec{Allow: []string{"mcp:fs:read_file"}}),
			call: Call{Server: "fs", Tool: "read_file", Arguments: map[string]any{"path": "/srv/app/x"}},
			want: Allow, wantRule: "mcp:fs:read_file",
		},
		{
			name: "a path outside the workspace asks by default",
			spec: confined(PolicySpec{Allow: []string{"mcp:fs:read_file"}}),
			call: Call{Server: "fs", Tool: "read_file", Arguments: map[string]any{"path": "/etc/passwd"}},
			want: Ask, wantRule: "outside_workspace",
		},
		{
			name: "a path outside the workspace is denied when configured",
			spec: confined(PolicySpec{OutsideWorkspace: "deny", Ask: []string{"mcp:fs:read_file"}}),
			call: Call{Server: "fs", Tool: "read_file", Arguments: map[string]any{"path": "/etc/passwd"}},
			want: Deny, wantRule: "outside_workspace",
		},
		{
			name: "a deny rule is decided before the workspace",
			spec: confined(PolicySpec{OutsideWorkspace: "deny", Deny: []string{"mcp:fs:*:path=/etc/**"}}),
			call: Call{Server: "fs", Tool: "read_file", Arguments: map[string]any{"path": "/etc/passwd"}},
			want: Deny, wantRule: "mcp:fs:*:path=/etc/**",
		},
		{
			name: "an allow with a condition on the key overrides the workspace",
			spec: confined(PolicySpec{Allow: []string{"mcp:fs:read_file:path=/usr/share/**"}}),
			call: Call{Server: "fs", Tool: "read_file", Arguments: map[string]any{"path": "/usr/share/dict/words"}},
			want: Allow, wantRule: "mcp:fs:read_file:path=/usr/share/**",
		},
		{
			name: "an allow with a negated condition does not override the workspace",
			spec: confined(PolicySpec{Allow: []string{"mcp:fs:read_file:path!=/etc/**"}}),
			call: Call{Server: "fs", Tool: "read_file", Arguments: map[string]any{"path": "/usr/share/dict/words"}},
			want: Ask, wantRule: "outside_workspace",
		},
		{
			name: "an allow must cover every outside path to override",
			spec: confined(PolicySpec{Allow: []string{"mcp:fs:copy:source=/usr/share/**"}}),
			call: Call{Server: "fs", Tool: "copy", Arguments: map[string]any{"source": "/usr/share/a", "destination": "/etc/cron.d/x"}},
			want: Ask, wantRule: "outside_workspace",
		},
		{
			name: "a later allow that covers the outside path is preferred",
			spec: confined(PolicySpec{Allow: []string{"mcp:fs:*", "mcp:fs:read_file:path=/usr/share/**"}}),
			call: Call{Server: "fs", Tool: "read_file", Arguments: map[string]any{"path": "/usr/share/a"}},
			want: Allow, wantRule: "mcp:fs:read_file:path=/usr/share/**",
		},
		{
			name: "an ask rule still asks when an allow overrides the workspace",
			spec: confined(PolicySpec{Ask: []string{"mcp:fs:read_file"}, Allow: []string{"mcp:fs:read_file:path=/usr/**"}}),
			call: Call{Server: "fs", Tool: "read_file", Arguments: map[string]any{"path": "/usr/a"}},
			want: Ask, wantRule: "mcp:fs:read_file",
		},
		{
			name: "a nested path-like key is checked",
			spec: confined(PolicySpec{Allow: []string{"mcp:fs:*"}}),
			call: Call{Server: "fs", Tool: "search", Arguments: map[string]any{"options": map[string]any{"cwd": "/"}}},
			want: Ask, wantRule: "outside_workspace",
		},
		{
			name: "every element of a path array is checked",
			spec: confined(PolicySpec{Allow: []string{"mcp:fs:*"}}),
			call: Call{Server: "fs", Tool: "read_multiple_files", Arguments: map[string]any{"paths": []any{"a", "/etc/passwd"}}},
			want: Ask, wantRule: "outside_workspace",
		},
		{
			name: "a relative path is inside once joined to the root",
			spec: confined(PolicySpec{Allow: []string{"mcp:fs:*"}}),
			call: Call{Server: "fs", Tool: "read_file", Arguments: map[string]any{"path": "src/main.go"}},
			want: Allow, wantRule: "mcp:fs:*",
		},
		{
			name: "a relative path escaping the root is outside",
			spec: confined(PolicySpec{Allow: []string{"mcp:fs:*"}}),
			call: Call{Server: "fs", Tool: "read_file", Arguments: map[string]any{"path": "../../etc/passwd"}},
			want: Ask, wantRule: "outside_workspace",
		},
		{
			name: "a home-relative path is outside",
			spec: confined(PolicySpec{Allow: []string{"mcp:fs:*"}}),
			call: Call{Server: "fs", Tool: "read_file", Arguments: map[string]any{"path": "~/.ssh/id_ed25519"}},
			want: Ask, wantRule: "outside_workspace",
		},
		{
			name: "the client's roots are the workspace",
			spec: global(PolicySpec{WorkspaceFromRoots: true, OutsideWorkspace: "deny", Allow: []string{"mcp:fs:*"}}),
			call: Call{Server: "fs", Tool: "read_file", Roots: []string{"/home/u/proj"}, Arguments: map[string]any{"path": "/home/u/proj/a"}},
			want: Allow, wantRule: "mcp:fs:*",
		},
		{
			name: "without roots nothing is inside",
			spec: global(PolicySpec{WorkspaceFromRoots: true, OutsideWorkspace: "deny", Allow: []string{"mcp:fs:*"}}),
			call: Call{Server: "fs", Tool: "read_file", Arguments: map[string]any{"path": "/home/u/proj/a"}},
			want: Deny, wantRule: "outside_workspace",
		},
		{
			name: "a relative root is ignored",
			spec: global(PolicySpec{WorkspaceFromRoots: true, OutsideWorkspace: "deny", Allow: []string{"mcp:fs:*"}}),
			call: Call{Server: "fs", Tool: "read_file", Roots: []string{"proj"}, Arguments: map[string]any{"path": "/proj/a"}},
			want: Deny, wantRule: "outside_workspace",
		},
		{
			name: "a call without path arguments is not confined",
			spec: confined(PolicySpec{OutsideWorkspace: "deny", Allow: []string{"mcp:git:*"}}),
			call: Call{Server: "git", Tool: "log", Arguments: map[string]any{"n": 5}},
			want: Allow, wantRule: "mcp:git:*",
		},
		{
			name: "a confined gate with no matching rule still contributes outside_workspace",
			spec: Spec{
				Global:  PolicySpec{Allow: []string{"mcp:fs:*"}},
				Servers: map[string]ServerSpec{"fs": {Policy: PolicySpec{Workspace: []string{"/srv/app"}}}},
			},
			call: Call{Server: "fs", Tool: "read_file", Arguments: map[string]any{"path": "/etc/passwd"}},
			want: Ask, wantRule: "outside_workspace",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := mustCompile(t, tt.spec).Decide(tt.call)
			if got.Decision != tt.want || got.Rule != tt.wantRule {
				t.Errorf("Decide = %v by %q (%s), want %v by %q", got.Decision, got.Rule, got.Reason, tt.want, tt.wantRule)
			}
		})
	}
}
