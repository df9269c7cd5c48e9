package sandbox

import (
	"os"
	"strconv"
	"testing"
)

func TestSandboxStopsReadingSSHKey(t *testing.T) {
	t.Parallel()
	checkEscape(t, tool("read_file", func(w world) (string, string) { return w.home + "/.ssh/id_ed25519", "" }))
}

func TestSandboxStopsReadingAWSCredentials(t *testing.T) {
	t.Parallel()
	checkEscape(t, tool("read_file", func(w world) (string, string) { return w.home + "/.aws/credentials", "" }))
}

func TestSandboxStopsReadingMcpwardenConfig(t *testing.T) {
	t.Parallel()
	checkEscape(t, tool("read_file", func(w world) (string, string) { return w.state + "/config.yaml", "" }))
}

func TestSandboxStopsReadingAuditLog(t *testing.T) {
	t.Parallel()
	checkEscape(t, tool("read_file", func(w world) (string, string) { return w.state + "/audit.log", "" }))
}

func TestSandboxStopsReadingTokenStore(t *testing.T) {
	t.Parallel()
	checkEscape(t, tool("read_file", func(w world) (string, string) { return w.state + "/tokens.json", "" }))
}

// A system-wide config in /etc is as much mcpwarden's as one in its state
// directory: /etc is readable only where libc, TLS and time zones need it.
func TestSandboxStopsReadingMcpwardenConfigInEtc(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 {
		t.Skip("planting a file in /etc needs root")
	}
	dir, err := os.MkdirTemp("/etc", "mcpwarden-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	if err := os.WriteFile(dir+"/config.yaml", []byte("token: secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	checkEscape(t, tool("read_file", func(w world) (string, string) { return dir + "/config.yaml", "" }))
}

func TestSandboxStopsRewritingMcpwardenConfig(t *testing.T) {
	t.Parallel()
	checkEscape(t, tool("append_file", func(w world) (string, string) { return w.state + "/config.yaml", "" }))
}

func TestSandboxStopsReadingParentEnviron(t *testing.T) {
	t.Parallel()
	checkEscape(t, func(t *testing.T, w world, m mode) string {
		s := start(t, w, m, sessionOpts{})
		return s.call("grep_file", "/proc/"+itoa(s.cmd.Process.Pid)+"/environ", "MCPWARDEN_TOKEN_KEY")
	})
}

func TestSandboxHidesSecretsInItsOwnEnvironment(t *testing.T) {
	t.Parallel()
	checkEscape(t, tool("find_env", func(w world) (string, string) {
		return "MCPWARDEN_TOKEN_KEY,GITHUB_TOKEN,AWS_SECRET_ACCESS_KEY", ""
	}))
}

func TestSandboxStopsAppendingToBashrc(t *testing.T) {
	t.Parallel()
	checkEscape(t, tool("append_file", func(w world) (string, string) { return w.home + "/.bashrc", "" }))
}

func TestSandboxStopsAppendingToAuthorizedKeys(t *testing.T) {
	t.Parallel()
	checkEscape(t, tool("append_file", func(w world) (string, string) { return w.home + "/.ssh/authorized_keys", "" }))
}

func TestSandboxStopsWritingOutThroughSymlink(t *testing.T) {
	t.Parallel()
	checkEscape(t, tool("symlink_write", func(w world) (string, string) { return w.work, w.home + "/.bashrc" }))
}

func TestSandboxStopsWritingOutThroughSymlinkFromPrivateHome(t *testing.T) {
	t.Parallel()
	checkEscape(t, tool("symlink_write", func(w world) (string, string) { return w.sbxHome, w.state + "/config.yaml" }))
}

func TestSandboxStopsReadingThroughSymlink(t *testing.T) {
	t.Parallel()
	checkEscape(t, tool("symlink_read", func(w world) (string, string) { return w.work, w.home + "/.ssh/id_ed25519" }))
}

func TestSandboxStopsWritingOutThroughHardLink(t *testing.T) {
	t.Parallel()
	checkEscape(t, tool("hardlink_write", func(w world) (string, string) { return w.work, w.home + "/.bashrc" }))
}

func TestSandboxStopsRenamingOutOfWorkspace(t *testing.T) {
	t.Parallel()
	checkEscape(t, tool("rename_out", func(w world) (string, string) { return w.work, w.home + "/.profile" }))
}

func TestSandboxStopsExecutingDroppedScriptInTmpDir(t *testing.T) {
	t.Parallel()
	checkEscape(t, tool("exec_dropped", func(w world) (string, string) { return w.sbxTmp, "" }))
}

func TestSandboxStopsExecutingDroppedBinaryInWorkspace(t *testing.T) {
	t.Parallel()
	checkEscape(t, tool("exec_dropped_elf", func(w world) (string, string) { return w.work, "" }))
}

// The setuid binary stands in for su or passwd: a copy of id, setuid
// root, in a directory the sandbox may execute from.
func TestSandboxStopsGainingPrivilegeThroughSetuidBinary(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 {
		t.Skip("making a setuid-root binary needs root")
	}
	checkEscape(t, func(t *testing.T, w world, m mode) string {
		dir := w.root + "/suid"
		os.Mkdir(dir, 0o755)
		if err := copyFile("/usr/bin/id", dir+"/id"); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir+"/id", os.ModeSetuid|0o755); err != nil {
			t.Fatal(err)
		}
		p := w.policy(m)
		p.Exec = append(p.Exec, dir)
		return start(t, w, m, sessionOpts{policy: &p}).call("setuid_exec", dir+"/id", "")
	})
}

func itoa(n int) string { return strconv.Itoa(n) }
