package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
)

var updateGolden = flag.Bool("update", false, "rewrite the --json golden files in testdata/golden")

// matchesGolden compares got with testdata/golden/name, or with -update
// writes it there.
func matchesGolden(t *testing.T, name, got string) {
	t.Helper()
	file := filepath.Join("testdata", "golden", name)
	if *updateGolden {
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (go test -run %s -update writes it)", err, strings.SplitN(t.Name(), "/", 2)[0])
	}
	if diff := gocmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s", file, diff)
	}
}

// TestJSONOutputMatchesTheGoldenFiles runs check, validate, pin and test with
// --json and compares what they print, with the temporary directory and
// the stand-in server's path replaced (and test's clock, see untimed), to
// testdata/golden. The servers
// run unsandboxed: what a sandbox can apply depends on the machine. go test -run
// TestJSONOutput -update rewrites the files.
func TestJSONOutputMatchesTheGoldenFiles(t *testing.T) {
	t.Parallel()
	const lintMe = "profiles:\n  ci:\n    servers: [fz]\n"
	tests := []struct {
		name   string
		extra  string
		args   []string
		code   int
		golden string
	}{
		{"check allows a read, naming the rule and the config's warnings", lintMe,
			[]string{"check", "mcp:fs:read_file", `{"path":"README.md"}`, "--json"}, 0, "check-allow.json"},
		{"check denies a write to /etc, naming every rule considered", "",
			[]string{"check", "mcp:fs:write_file", "--arg", "path=/etc/passwd", "--json"}, exitDeny, "check-deny.json"},
		{"validate offline reports the config's warnings as findings", lintMe,
			[]string{"validate", "--offline", "--json"}, 0, "validate-offline.json"},
		{"validate offline with --strict fails on a warning", lintMe,
			[]string{"validate", "--offline", "--strict", "--json"}, exitError, "validate-offline-strict.json"},
		{"validate lints the policy against the listed tools", "sandbox: off\n",
			[]string{"validate", "--json"}, 0, "validate-online.json"},
		{"validate reports an invalid config", "startup_wait: 10\n",
			[]string{"validate", "--offline", "--json"}, exitUsage, "validate-invalid.json"},
		{"pin reports a server not pinned yet", "sandbox: off\n",
			[]string{"pin", "--json"}, exitError, "pin-unpinned.json"},
		{"test reports each case as go test -json does, a failing one with want and got", "",
			[]string{"test", "--json", "testdata/policytest/fs.cases.yaml"}, exitError, "test-fail.json"},
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := writeToolsConfig(t, tc.extra)
			args := append([]string{tc.args[0], "--config", path}, tc.args[1:]...)
			code, out, errOut := run(t, args...)
			if code != tc.code {
				t.Fatalf("%v exited %d, want %d; stderr: %s", tc.args, code, tc.code, errOut)
			}
			got := untimed(strings.NewReplacer(filepath.Dir(path), "$DIR", exe, "$EXE").Replace(out))
			matchesGolden(t, tc.golden, got)
		})
	}
}
