package main

import (
	"strings"
	"testing"
)

func TestUsageErrorsExitTwoAndSayWhatWasMeant(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"a misspelt command names the command meant", []string{"chek"}, []string{`unknown command "chek"`, `did you mean "check"?`}},
		{"help on a misspelt command names the command meant", []string{"help", "chek"}, []string{`unknown command "chek"`, `did you mean "check"?`}},
		{"help on a misspelt audit command names the command meant", []string{"help", "audit", "verfy"}, []string{`unknown command "verfy" for "mcpwarden audit"`, `did you mean "verify"?`}},
		{"help on an unknown audit command says which there are", []string{"help", "audit", "foo"}, []string{`unknown command "foo" for "mcpwarden audit"`, "its commands are", "verify"}},
		{"help on a word after a command without commands is refused", []string{"help", "check", "foo"}, []string{`unknown command "foo" for "mcpwarden check"`, "mcpwarden help check"}},
		{"an unknown audit command is refused, not answered with help", []string{"audit", "foo"}, []string{`unknown command "foo" for "mcpwarden audit"`, "its commands are", "verify"}},
		{"a misspelt audit command names the command meant", []string{"audit", "verfy", "x.jsonl"}, []string{`did you mean "verify"?`}},
		{"a misspelt flag names the flag meant", []string{"validate", "--strct"}, []string{"unknown flag: --strct", "did you mean --strict?"}},
		{"a misspelt flag of check names the flag meant", []string{"check", "--profle", "ci"}, []string{"did you mean --profile?"}},
		{"a long flag written with one dash, as go test's, names the flag meant", []string{"test", "--config", "x.yaml", "-run", "read", "c.yaml"}, []string{"unknown shorthand flag: 'r' in -run", "did you mean --run?"}},
		{"an unknown flag far from any says where the flags are", []string{"check", "--bogus"}, []string{"unknown flag: --bogus", "mcpwarden check --help"}},
		{"too few arguments to check are a usage error", []string{"check"}, []string{"accepts between 1 and 2 arg(s)", "usage: mcpwarden check --config FILE mcp:SERVER:TOOL", "mcpwarden check --help"}},
		{"audit verify without a log says what it takes", []string{"audit", "verify"}, []string{"usage: mcpwarden audit verify FILE..."}},
		{"a config file given as validate's argument is the --config meant", []string{"validate", "mcpwarden.yaml"}, []string{`mcpwarden validate takes no arguments; got "mcpwarden.yaml"`, "did you mean --config mcpwarden.yaml?"}},
		{"an argument to a command that takes none is a usage error", []string{"version", "x"}, []string{`mcpwarden version takes no arguments; got "x"`}},
		{"an unknown shell for completion is refused", []string{"completion", "fsh"}, []string{`did you mean "fish"?`}},
		{"serve without a config is a usage error", []string{"serve"}, []string{"--config FILE is required"}},
		{"a flag value of the wrong type is a usage error", []string{"serve", "--shutdown-grace", "soon"}, []string{"--shutdown-grace"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, _, stderr := run(t, tc.args...)
			if code != exitUsage {
				t.Errorf("%v exited %d, want %d; stderr: %s", tc.args, code, exitUsage, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("%v: stderr %q lacks %q", tc.args, stderr, w)
				}
			}
		})
	}
}

func TestVersionFlagPrintsTheVersion(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--version"}, {"version"}} {
		code, out, _ := run(t, args...)
		if code != 0 || !strings.HasPrefix(out, "mcpwarden ") {
			t.Errorf("%v = %d, %q; want 0 and the version", args, code, out)
		}
	}
}

func TestHelpStatesTheExitCodeContract(t *testing.T) {
	t.Parallel()
	_, out, _ := run(t, "--help")
	for _, w := range []string{"Exit codes: 0 success", "2 bad usage", "3 for ask", "4 for deny"} {
		if !strings.Contains(out, w) {
			t.Errorf("--help lacks %q", w)
		}
	}
}

func TestHelpOnACommandStillShowsItsHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"help"}, {"help", "check"}, {"help", "audit", "verify"}} {
		if code, out, stderr := run(t, args...); code != 0 || !strings.Contains(out, "Usage:") {
			t.Errorf("%v = %d, stdout %q, stderr %q; want 0 and the help", args, code, out, stderr)
		}
	}
}
