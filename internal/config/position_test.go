package config

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// loadError writes text as file in a new directory, loads it and returns
// the error Load gives, failing the test when there is none or it lacks
// one of want.
func loadError(t *testing.T, file, text string, want []string) error {
	t.Helper()
	path := filepath.Join(t.TempDir(), file)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path, nil)
	if err == nil {
		t.Fatal("Load succeeded")
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q\nlacks %q", err, w)
		}
	}
	return err
}

func TestDecodeErrorsNameFileLineColumnKeyAndFix(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, file, text string
		want             []string
	}{
		{"a YAML string where a list is wanted", "c.yaml", "servers:\n  fs:\n    command: npx\n    args: \"-y\"\n",
			[]string{"c.yaml:4:5: servers.fs.args: want a list, e.g. args: [-y, pkg]"}},
		{"a JSON string where a list is wanted", "c.json", "{\n  \"servers\": {\n    \"fs\": {\"command\": \"npx\", \"args\": \"-y\"}\n  }\n}\n",
			[]string{"c.json:3:30: servers.fs.args: want a list"}},
		{"a TOML string where a list is wanted", "c.toml", "[servers.fs]\ncommand = \"npx\"\nargs = \"-y\"\n",
			[]string{"c.toml:3:1: servers.fs.args: want a list"}},
		{"a section as an item of a list of text", "c.yaml", "servers:\n  fs:\n    command: npx\n    args: [-y, {a: 1}]\n",
			[]string{"c.yaml:4:16: servers.fs.args[1]: want text for each item, e.g. args: [-y, pkg]; got a section"}},
		{"a list as an item of a list of rules", "c.yaml", "servers: {fs: {command: npx}}\npolicy:\n  deny: [\"mcp:fs:*\", [x]]\n",
			[]string{"policy.deny[1]: want text for each item, e.g. deny: [value]; got a list"}},
		{"text as an item of a list of sections", "c.yaml", "servers: {fs: {command: npx}}\nlimits: [oops]\n",
			[]string{"limits[0]: want each item of limits to be a section holding keys (", "got text"}},
		{"a YAML duration without a unit", "c.yaml", "servers: {fs: {command: npx}}\nask:\n  timeout: 5y\n",
			[]string{"c.yaml:3:3: ask.timeout: want a duration", "durations look like 30s, 5m, 1h", `got text "5y"`}},
		{"a bare number taken for a duration", "c.yaml", "servers: {fs: {command: npx}}\nstartup_wait: 10\n",
			[]string{"c.yaml:2:1: startup_wait: want a duration", "got the number 10"}},
		{"a JSON duration with an unknown unit", "c.json", "{\"servers\": {\"fs\": {\"command\": \"npx\", \"call_timeout\": \"3 minutes\"}}}",
			[]string{"c.json:1:39: servers.fs.call_timeout: want a duration", "durations look like"}},
		{"a misspelt YAML key", "c.yaml", "servers:\n  fs:\n    comand: npx\n",
			[]string{"c.yaml:3:5: servers.fs.comand: unknown key; did you mean servers.fs.command?"}},
		{"a misspelt TOML key", "c.toml", "[servers.fs]\ncommand = \"npx\"\ncwdd = \"/tmp\"\n",
			[]string{"c.toml:3:1: servers.fs.cwdd: unknown key; did you mean servers.fs.cwd?"}},
		{"a misspelt key in a JSON list member", "c.json", "{\"servers\": {\"fs\": {\"command\": \"npx\"}},\n \"limits\": [{\"match\": \"mcp:fs:*\", \"max\": 1, \"window\": \"1m\", \"then\": \"ask\", \"scop\": \"session\"}]}",
			[]string{"c.json:2:76: limits[0].scop: unknown key; did you mean limits[0].scope?"}},
		{"broken JSON syntax", "c.json", "{\"servers\": {\n  \"fs\": {\"command\": \"npx\",}}}",
			[]string{"c.json:2:27: invalid JSON: invalid character '}'"}},
		{"a JSON file holding a list", "c.json", "[1, 2]",
			[]string{"c.json:1:1: invalid JSON: the file must hold an object"}},
		{"broken TOML syntax", "c.toml", "[servers.fs]\ncommand = \"npx\n",
			[]string{"c.toml:2:15: invalid TOML: basic strings cannot have new lines"}},
		{"broken YAML syntax", "c.yaml", "servers:\n  fs:\n    command: npx\n  x: [\n",
			[]string{"c.yaml:4: invalid YAML: did not find expected node content"}},
		{"a key given twice in YAML", "c.yaml", "servers:\n  fs:\n    command: npx\n  fs:\n    command: x\n",
			[]string{"c.yaml:4: invalid YAML: mapping key \"fs\" already defined at line 2"}},
		{"a value the validator refuses in YAML", "c.yaml", "servers:\n  fs:\n    command: npx\nlog:\n  level: loud\n",
			[]string{"c.yaml:5:3: log.level: \"loud\" is not one of debug, info, warn, error"}},
		{"a value the validator refuses in TOML", "c.toml", "log = {level = \"loud\"}\n[servers.fs]\ncommand = \"npx\"\n",
			[]string{"c.toml:1:1: log.level:"}},
		{"a key the validator misses is placed at its section", "c.yaml", "servers:\n  fs:\n    args: [x]\n",
			[]string{"c.yaml:2:3: servers.fs.command: required"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := loadError(t, tc.file, tc.text, tc.want)
			if strings.Contains(err.Error(), "source data") || strings.Contains(err.Error(), "'servers[") {
				t.Errorf("error %q speaks the decoder's jargon", err)
			}
		})
	}
}

// lineBreaks counts the line breaks in data as YAML and editors count
// them: "\r\n", and a "\r" or "\n" alone.
func lineBreaks(data []byte) int {
	return bytes.Count(data, []byte{'\n'}) + bytes.Count(data, []byte{'\r'}) - bytes.Count(data, []byte("\r\n"))
}

// FuzzKeyPosNeverPanics places keys in any text of any format: an error
// about a broken file must not crash the load that reports it, and a
// place found is inside the text.
func FuzzKeyPosNeverPanics(f *testing.F) {
	f.Add([]byte("servers:\n  fs:\n    args: x\n"), ".yaml", "servers.fs.args")
	f.Add([]byte(`{"servers": {"fs": {"args": "x"}}, "limits": [{"scop": 1}]}`), ".json", "limits[0].scop")
	f.Add([]byte("[servers.fs]\nargs = \"x\"\n[[limits]]\nscop = 1\n"), ".toml", "servers.fs.args")
	f.Add([]byte(`{"a": [1, {"b": 2}]}`), ".json", "a[1].b")
	f.Fuzz(func(t *testing.T, data []byte, ext, key string) {
		p := keyPos(data, ext, key)
		if p.line > lineBreaks(data)+1 || p.line < 0 || p.col < 0 {
			t.Errorf("keyPos(%q, %q) = %v, outside the text", data, key, p)
		}
		_, _ = parseError(data, errors.New("yaml: line 3: x"))
		_, _ = Parse(data, ext, "/", nil)
	})
}

// FuzzTOMLRedefinitionIsInTheText places the key or table a TOML text
// defines twice (go-toml's message for it has no position) in any text:
// it never panics, and a place found is inside the text, on a line that
// holds the name.
func FuzzTOMLRedefinitionIsInTheText(f *testing.F) {
	f.Add([]byte("[servers.fs]\ncommand = \"npx\"\ncommand = \"x\"\n"), "command")
	f.Add([]byte("[servers.fs]\ncommand = \"npx\"\n[servers.fs]\n"), "fs")
	f.Add([]byte("[a]\n\"b.c\" = 1\n\"b.c\" = 2\n"), "b.c")
	f.Add([]byte("[[limits]]\n[[limits]]\n"), "limits")
	f.Fuzz(func(t *testing.T, data []byte, name string) {
		p := tomlRedefinition(data, name)
		if p == (textPos{}) {
			return
		}
		lines := bytes.Split(data, []byte{'\n'})
		if p.line < 1 || p.line > len(lines) || p.col < 1 || p.col > len(lines[p.line-1])+1 {
			t.Fatalf("tomlRedefinition(%q, %q) = %v, outside the text", data, name, p)
		}
		last := name[strings.LastIndex(name, ".")+1:]
		if !bytes.Contains(lines[p.line-1], []byte(last)) {
			t.Errorf("tomlRedefinition(%q, %q) = %v, a line without %q", data, name, p, last)
		}
	})
}
