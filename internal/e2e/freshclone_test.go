package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// TestReadmeSetUpCommandsWorkFromAFreshClone clones the repository (the
// local checkout: what is committed, without the git-ignored .tools/ or
// anything a developer has lying about) and runs the README's first
// set-up command there as a user would: mcpwarden comes up with the
// quickstart, prints its approvals page, refuses /etc/passwd by
// outside_workspace, and an ask (a write) waits until it is approved with
// mcpwarden approvals and approve, as the quickstart says, and then
// writes. The second command must be the one .ci/run runs; it is not run
// here (it runs this test).
//
// What differs from a user's machine, and why: go run is the binary
// TestMain built from this tree (a compile per test would take minutes on
// a loaded machine); listen and the approvals page take free ports and the
// two servers start with node from the pinned .tools/ instead of npx
// (this machine has no network), both through MCPWARDEN_* variables, so
// the README's command and the quickstart's file are used as written.
func TestReadmeSetUpCommandsWorkFromAFreshClone(t *testing.T) {
	if testing.Short() {
		t.Skip("clones the repository and runs the quickstart")
	}
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := testkit.ReadmeSetupCommands(string(readme))
	if err != nil {
		t.Fatal(err)
	}
	if len(cmds) != 2 {
		t.Fatalf("the README's set-up section has commands %q, want two", cmds)
	}
	serve := strings.Fields(cmds[0])
	if len(serve) < 4 || serve[0] != "go" || serve[1] != "run" || serve[2] != "./cmd/mcpwarden" || serve[3] != "serve" {
		t.Fatalf("the first set-up command %q is not go run ./cmd/mcpwarden serve ...", cmds[0])
	}

	clone := filepath.Join(t.TempDir(), "mcpwarden")
	if out, err := exec.CommandContext(t.Context(), "git", "clone", "--quiet", repoRoot, clone).CombinedOutput(); err != nil {
		t.Skipf("the repository cannot be cloned (not a git checkout?): %v\n%s", err, out)
	}
	checkCIRunsTheTestCommand(t, clone, cmds[1])

	listen, page := testkit.FreeAddr(t), testkit.FreeAddr(t)
	env := append(os.Environ(),
		"MCPWARDEN_LISTEN="+listen,
		"MCPWARDEN_ASK__APPROVALS_LISTEN="+page,
		"MCPWARDEN_SERVERS__FS__COMMAND=node",
		fmt.Sprintf("MCPWARDEN_SERVERS__FS__ARGS=[%q, .]", filesystemIndex()),
		"MCPWARDEN_SERVERS__EVERYTHING__COMMAND=node",
		fmt.Sprintf("MCPWARDEN_SERVERS__EVERYTHING__ARGS=[%q, stdio]", filepath.Join(npmMods, "@modelcontextprotocol", "server-everything", "dist", "index.js")),
	)
	stderr := &testkit.LockedBuffer{}
	cmd := exec.Command(binary, serve[3:]...)
	cmd.Dir, cmd.Env, cmd.Stderr, cmd.SysProcAttr = clone, env, stderr, groupAttr()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = killGroup(cmd.Process.Pid)
			<-done
		}
		if t.Failed() {
			t.Logf("mcpwarden stderr:\n%s", stderr.String())
		}
	})
	testkit.Eventually(t, 60*time.Second, "mcpwarden listening on "+listen, func() bool {
		conn, err := net.DialTimeout("tcp", listen, 200*time.Millisecond)
		if err == nil {
			conn.Close()
		}
		return err == nil
	})
	for _, want := range []string{"approvals page (keep this link private): http://" + page, "starting upstream"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("the start-up log lacks %q", want)
		}
	}

	c := connectHTTP(t, "http://"+listen+"/mcp")
	awaitListed(t, c, "fs__write_file")
	passwd := callTool(t, c, "fs__read_text_file", map[string]any{"path": "/etc/passwd"})
	if !passwd.IsError || !strings.Contains(testkit.Text(passwd), "outside_workspace") {
		t.Errorf("reading /etc/passwd = %q (error %v), want refused by outside_workspace", testkit.Text(passwd), passwd.IsError)
	}

	// The quickstart's ask: a write waits until approved from another terminal.
	pending := callAsync(t, c, map[string]any{"path": "notes.txt", "content": "hi"})
	config := serve[slices.Index(serve, "--config")+1]
	cli := func(args ...string) string {
		t.Helper()
		c := exec.CommandContext(t.Context(), binary, args...)
		c.Dir, c.Env = clone, env
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("mcpwarden %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	var id string
	testkit.Eventually(t, 30*time.Second, "the write listed by mcpwarden approvals", func() bool {
		var listing struct{ Pending []struct{ ID string } }
		if err := json.Unmarshal([]byte(cli("approvals", "--config", config, "--json")), &listing); err != nil || len(listing.Pending) != 1 {
			return false
		}
		id = listing.Pending[0].ID
		return true
	})
	cli("approve", id, "--config", config)
	if res := result(t, pending); res.IsError {
		t.Fatalf("the approved write failed: %s", testkit.Text(res))
	}
	if got, err := os.ReadFile(filepath.Join(clone, "notes.txt")); err != nil || string(got) != "hi" {
		t.Errorf("notes.txt = %q, %v; want the approved write's hi", got, err)
	}
	audit, err := os.ReadFile(filepath.Join(clone, "examples", "mcpwarden-audit.jsonl"))
	if err != nil || !strings.Contains(string(audit), "outside_workspace") {
		t.Errorf("the quickstart's audit log (examples/mcpwarden-audit.jsonl) lacks the refusal: %v", err)
	}
}

// checkCIRunsTheTestCommand fails unless the clone's .ci/run runs test,
// the README's second set-up command, as its command: CI runs what the
// README tells a user to run.
func checkCIRunsTheTestCommand(t *testing.T, clone, test string) {
	t.Helper()
	run, err := os.ReadFile(filepath.Join(clone, ".ci", "run"))
	if err != nil {
		t.Fatalf("the clone has no .ci/run: %v", err)
	}
	for _, line := range strings.Split(string(run), "\n") {
		if strings.TrimPrefix(strings.TrimSpace(line), "exec ") == test {
			if info, err := os.Stat(filepath.Join(clone, filepath.FromSlash(test))); err != nil || info.Mode()&0o111 == 0 {
				t.Errorf("the clone's %s is not an executable file: %v", test, err)
			}
			return
		}
	}
	t.Errorf("the clone's .ci/run does not run %q, the README's test command:\n%s", test, run)
}
