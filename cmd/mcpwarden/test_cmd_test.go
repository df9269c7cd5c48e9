package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// eventClock matches the Time and Elapsed of test --json's events.
var eventClock = regexp.MustCompile(`"Time":"[^"]*"|"Elapsed":[0-9.e+-]+`)

// untimed is text with test --json's clock readings replaced, for golden
// files.
func untimed(text string) string {
	return eventClock.ReplaceAllStringFunc(text, func(m string) string {
		if strings.HasPrefix(m, `"Time"`) {
			return `"Time":"$TIME"`
		}
		return `"Elapsed":0`
	})
}

// writeCases writes a case file into a directory of its own.
func writeCases(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mcpwarden.cases.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestTestKeepsGoTestsExitCodes: 0 when every case passes, 1 when one
// fails, 2 when the config, a case file or a flag is wrong, each error at
// its place.
func TestTestKeepsGoTestsExitCodes(t *testing.T) {
	t.Parallel()
	const pass = "cases:\n  - {name: a read is allowed, tool: mcp:fs:read_file, expect: allow}\n"
	const fail = "cases:\n  - {name: a delete asks, tool: mcp:fs:delete_file, expect: ask}\n"
	tests := []struct {
		name  string
		cases []string // case files' text
		flags []string
		code  int
		want  []string
	}{
		{"every case passes", []string{pass}, nil, 0, []string{"ok  \t", "mcpwarden.cases.yaml\t1 case\n"}},
		{"a case fails", []string{fail}, nil, exitError, []string{"--- FAIL: a delete asks (", "mcpwarden.cases.yaml:2)", "want:       ask", "got:        deny by mcp:fs:delete_file", "\nFAIL\n"}},
		{"one of several files fails", []string{pass, fail}, nil, exitError, []string{"ok  \t", "FAIL\t", "1 case, 1 failed"}},
		{"-run leaves the failing case out", []string{pass, fail}, []string{"--run", "read"}, 0, []string{"[no cases to run]"}},
		{"a misspelt key in a case file", []string{"cases:\n  - {name: a, tool: mcp:fs:read_file, expcet: allow}\n"}, nil, exitUsage,
			[]string{"mcpwarden.cases.yaml:2:39: cases[0] (a).expcet: unknown key; did you mean cases[0] (a).expect?"}},
		{"a server the config lacks", []string{"cases:\n  - {name: a, tool: mcp:fz:read_file, expect: allow}\n"}, nil, exitUsage,
			[]string{"mcpwarden.cases.yaml:2:21", `no server "fz"`, "did you mean mcp:fs:...?"}},
		{"a -run that is no regular expression", []string{pass}, []string{"--run", "("}, exitUsage, []string{`--run "("`}},
		{"a case file that is not there", nil, []string{"no-such.cases.yaml"}, exitUsage, []string{"reading cases", "no-such.cases.yaml"}},
		{"no case file", nil, nil, exitUsage, []string{"requires at least 1 arg"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := []string{"test", "--config", writeToolsConfig(t, "")}
			for _, text := range tc.cases {
				args = append(args, writeCases(t, text))
			}
			code, out, errOut := run(t, append(args, tc.flags...)...)
			if code != tc.code {
				t.Errorf("exit %d, want %d:\n%s%s", code, tc.code, out, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(out+errOut, w) {
					t.Errorf("output lacks %q:\n%s%s", w, out, errOut)
				}
			}
		})
	}
}
