package config

import (
	"strings"
	"testing"
)

// TestJSONKeyWrittenTwiceCannotDropADeny writes a JSON config whose
// reviewer sees a deny list while a second key of the same name, further
// down, replaces it: a JSON parser keeps the last silently (YAML and TOML
// refuse), so the deny would be gone. The load must refuse the config,
// naming the key and where its second copy is.
func TestJSONKeyWrittenTwiceCannotDropADeny(t *testing.T) {
	t.Parallel()
	const fs = `"servers": {"fs": {"command": "npx"}}`
	tests := []struct {
		name string
		text string
		want []string
	}{
		{"a second policy drops the first's deny rules", `{` + fs + `, "policy": {"deny": ["mcp:fs:write_file"]},
"policy": {"default": "allow"}}`, []string{"config:2:1", "policy is written twice"}},
		{"a second deny inside the policy replaces the first", `{` + fs + `, "policy": {"deny": ["mcp:fs:write_file"], "default": "allow", "deny": []}}`,
			[]string{"config:1:103", "policy.deny is written twice"}},
		{"a second server of the same name replaces its command", `{"servers": {"fs": {"command": "npx"}, "fs": {"command": "sh"}}}`,
			[]string{"config:1:40", "servers.fs is written twice"}},
		{"a key twice inside a list's object", `{` + fs + `, "limits": [{"match": "mcp:fs:*", "max": 1, "max": 1000, "window": "1h"}]}`,
			[]string{"limits[0].max is written twice"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tc.text), ".json", "/", nil)
			if err == nil {
				t.Fatalf("the config loads; want it refused")
			}
			for _, w := range append(tc.want, "write it once") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestJSONKeyWrittenTwiceInAnotherCaseIsRefused is the variant: "Policy"
// after "policy" is no second copy to JSON, but the decoder matches keys
// regardless of case, so it must not slip past either.
func TestJSONKeyWrittenTwiceInAnotherCaseIsRefused(t *testing.T) {
	t.Parallel()
	text := `{"servers": {"fs": {"command": "npx"}}, "policy": {"deny": ["mcp:fs:write_file"]}, "Policy": {"default": "allow"}}`
	if _, err := Parse([]byte(text), ".json", "/", nil); err == nil || !strings.Contains(err.Error(), "Policy") {
		t.Errorf("Parse = %v; want Policy refused", err)
	}
}

// FuzzJSONTwiceIsInTheText finds keys written twice in any text: it never
// panics, and a key it reports is placed inside the text, at a quote.
func FuzzJSONTwiceIsInTheText(f *testing.F) {
	f.Add([]byte(`{"policy": {"deny": []}, "policy": {}}`))
	f.Add([]byte(`{"a": [{"b": 1, "b": 2}]}`))
	f.Add([]byte(`{"a\"b": 1, "a\"b": 2}`))
	f.Add([]byte(`[[[{"x": {"y": 1, "y": 2}}]]]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		key, pos := jsonTwice(data)
		if key == "" {
			return
		}
		lines := strings.Split(string(data), "\n")
		if pos.line < 1 || pos.line > len(lines) || pos.col < 1 || pos.col > len(lines[pos.line-1]) || lines[pos.line-1][pos.col-1] != '"' {
			t.Fatalf("jsonTwice(%q) = %q at %v, not at a quote in the text", data, key, pos)
		}
	})
}
