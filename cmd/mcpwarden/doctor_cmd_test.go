//go:build linux

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/mcpwarden/mcpwarden/internal/sandbox"
)

func TestDoctorRefusesAnUnknownFeature(t *testing.T) {
	t.Parallel()
	code, _, stderr := run(t, "doctor", "--disable", "apparmor")
	if code != exitUsage || !strings.Contains(stderr, "write user_namespaces, landlock") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}

// The real binary is its own launcher and self-test: doctor passes on
// this machine and fails with Landlock "missing", run as the unprivileged
// user when the tests run as root.
func TestDoctorRunsTheSelfTestThroughTheMcpwardenBinary(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("the self-test runs on Linux")
	}
	dir, err := os.MkdirTemp("", "mcpwarden-doctor-cmd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "mcpwarden")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building mcpwarden: %v\n%s", err, out)
	}
	cred := unprivileged(t)
	tests := []struct {
		name string
		args []string
		code int
	}{
		{name: "everything blocked on this machine", args: []string{"doctor", "--json"}, code: 0},
		{name: "fails without Landlock", args: []string{"doctor", "--json", "--disable", "landlock"}, code: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(bin, tt.args...)
			cmd.Dir = dir
			cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir}
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, _ := cmd.Output() // the exit code and the checkup say what went wrong
			var c sandbox.Checkup
			if err := json.Unmarshal(out, &c); err != nil {
				t.Fatalf("no checkup (%v): %s; stderr %s", err, out, stderr.String())
			}
			if code := cmd.ProcessState.ExitCode(); code != tt.code || c.OK != (tt.code == 0) {
				t.Fatalf("exit %d, ok %v, want exit %d:\n%s", code, c.OK, tt.code, out)
			}
			if len(c.Tiers) != 2 || c.Tiers[1].Tier != sandbox.TierLandlock || len(c.Tiers[1].Results) != len(sandbox.Attempts) {
				t.Fatalf("the self-test did not run in each tier:\n%s", out)
			}
		})
	}
}

// unprivileged is the credential of the user mcpwarden-sbx when the tests
// run as root (nil otherwise): the sandbox must work without root.
func unprivileged(t *testing.T) *syscall.Credential {
	t.Helper()
	if os.Getuid() != 0 {
		return nil
	}
	uid, uerr := exec.Command("id", "-u", "mcpwarden-sbx").Output()
	gid, gerr := exec.Command("id", "-g", "mcpwarden-sbx").Output()
	if uerr != nil || gerr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("running as root without the user mcpwarden-sbx: run .ci/setup")
		}
		t.Skip("running as root without the user mcpwarden-sbx: run .ci/setup")
	}
	u, _ := strconv.Atoi(strings.TrimSpace(string(uid)))
	g, _ := strconv.Atoi(strings.TrimSpace(string(gid)))
	return &syscall.Credential{Uid: uint32(u), Gid: uint32(g)}
}
