package clientconfig

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAllowInClaudeSettings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		in          string
		want        string
		wantChanged bool
	}{
		{"an empty file gets just the permission", ``, `{"permissions":{"allow":["mcp__mcpwarden"]}}`, true},
		{"other keys and entries are kept in their places",
			`{"env":{"A":"1"},"permissions":{"deny":["Bash(rm:*)"],"allow":["Read(src/**)"],"defaultMode":"acceptEdits"},"model":"x"}`,
			`{"env":{"A":"1"},"permissions":{"deny":["Bash(rm:*)"],"allow":["Read(src/**)","mcp__mcpwarden"],"defaultMode":"acceptEdits"},"model":"x"}`, true},
		{"settings without permissions get them last", `{"env":{}}`, `{"env":{},"permissions":{"allow":["mcp__mcpwarden"]}}`, true},
		{"an entry already there changes nothing", `{"permissions":{"allow":["mcp__mcpwarden"]}}`, `{"permissions":{"allow":["mcp__mcpwarden"]}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, changed, err := AllowInClaudeSettings([]byte(tt.in), ClaudePermission(""))
			if err != nil {
				t.Fatal(err)
			}
			if changed != tt.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tt.wantChanged)
			}
			if diff := cmp.Diff(tt.want, compact(t, got)); diff != "" {
				t.Errorf("settings (-want +got):\n%s", diff)
			}
		})
	}
	if _, _, err := AllowInClaudeSettings([]byte(`{"permissions":{"allow":"x"}}`), "mcp__mcpwarden"); err == nil {
		t.Error("a permissions.allow that is not a list was accepted")
	}
}

func TestAllowInOpenCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		in          string
		want        string
		wantChanged bool
	}{
		{"without a permission OpenCode does not ask", `{"mcp":{}}`, `{"mcp":{}}`, false},
		{"a catch-all allow does not ask", `{"permission":{"*":"allow","bash":"ask"}}`, `{"permission":{"*":"allow","bash":"ask"}}`, false},
		{"permission allow does not ask", `{"permission":"allow"}`, `{"permission":"allow"}`, false},
		{"permission ask becomes a catch-all and a last allow", `{"permission":"ask","mcp":{}}`, `{"permission":{"*":"ask","mcpwarden_*":"allow"},"mcp":{}}`, true},
		{"a catch-all ask gets a last allow", `{"permission":{"*":"ask","bash":{"git *":"allow"}}}`, `{"permission":{"*":"ask","bash":{"git *":"allow"},"mcpwarden_*":"allow"}}`, true},
		{"an earlier rule for mcpwarden is moved last", `{"permission":{"mcpwarden_*":"allow","*":"deny"}}`, `{"permission":{"*":"deny","mcpwarden_*":"allow"}}`, true},
		{"a last allow already there changes nothing", `{"permission":{"*":"ask","mcpwarden_*":"allow"}}`, `{"permission":{"*":"ask","mcpwarden_*":"allow"}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, changed, err := AllowInOpenCode([]byte(tt.in), "")
			if err != nil {
				t.Fatal(err)
			}
			if changed != tt.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tt.wantChanged)
			}
			if diff := cmp.Diff(tt.want, compact(t, got)); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}

func TestClientPromptFlag(t *testing.T) {
	t.Parallel()
	var p ClientPrompt
	if p != PromptSkip || p.String() != "skip" {
		t.Errorf("zero value = %v, want skip", p)
	}
	if err := p.Set("keep"); err != nil || p != PromptKeep {
		t.Errorf("Set(keep) = %v, %v", p, err)
	}
	if err := p.Set("never"); err == nil {
		t.Error("Set(never) was accepted")
	}
}

func compact(t *testing.T, data []byte) string {
	t.Helper()
	var v json.RawMessage
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%v: %s", err, data)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// FuzzAllowInClientSettings feeds any text to the two settings rewrites:
// they fail or return JSON that lets mcpwarden through, never panic.
func FuzzAllowInClientSettings(f *testing.F) {
	f.Add([]byte(`{"permissions":{"allow":["Read(**)"]}}`))
	f.Add([]byte(`{"permission":{"*":"ask"}}`))
	f.Add([]byte(`{"permission":"deny" /* c */,}`))
	f.Add([]byte(`{"permissions":{"allow":[1,{"a":2}]},"x":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if out, changed, err := AllowInClaudeSettings(data, "mcp__mcpwarden"); err == nil && changed {
			// The client (Node.js) reads keys exactly, not folded as
			// encoding/json binds struct fields: decode into maps.
			var top map[string]any
			err := json.Unmarshal(out, &top)
			permissions, _ := top["permissions"].(map[string]any)
			allow, _ := permissions["allow"].([]any)
			if err != nil || !slices.Contains(allow, any("mcp__mcpwarden")) {
				t.Errorf("AllowInClaudeSettings(%q) = %q, %v", data, out, err)
			}
		}
		if out, changed, err := AllowInOpenCode(data, ""); err == nil && changed {
			var top map[string]json.RawMessage
			var permission map[string]json.RawMessage
			err := json.Unmarshal(out, &top)
			if err == nil {
				err = json.Unmarshal(top["permission"], &permission)
			}
			if err != nil || string(permission["mcpwarden_*"]) != `"allow"` {
				t.Errorf("AllowInOpenCode(%q) = %q, %v", data, out, err)
			}
		}
	})
}

// TestImportingTwiceDoesNotAllowEverything: the permission import adds to
// let mcpwarden's tools through Claude Code's prompt must not come back, on
// the next import, as an mcpwarden rule allowing every tool.
func TestImportingTwiceDoesNotAllowEverything(t *testing.T) {
	t.Parallel()
	src := &Source{Format: ClaudeCode, Servers: []Server{{Name: "fs", Command: "npx", Transport: "stdio", Args: []string{"x"}}},
		Permissions: Permissions{Allow: []string{ClaudePermission(""), "mcp__mcpwarden__*", "mcp__mcpwarden__fs__read_file"}}}
	res, err := Convert(src, &Options{ProjectDir: "/p"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"mcp:fs:read_file"}; !slices.Equal(res.Rules.Allow, want) {
		t.Errorf("allow rules = %q, want %q", res.Rules.Allow, want)
	}
	if len(res.Skipped) != 2 {
		t.Errorf("skipped = %q, want the two entries about all of mcpwarden's tools", res.Skipped)
	}
}
