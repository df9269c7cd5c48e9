package e2e

import (
	"os"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// descendants returns the pids of every process below pid.
func descendants(pid int) []int {
	parent := map[int]int{}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		stat, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces, so cut after ")".
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		p, _ := strconv.Atoi(filepath.Base(d))
		if len(fields) > 1 {
			pp, _ := strconv.Atoi(fields[1])
			parent[p] = pp
		}
	}
	var out []int
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

func TestShutdownLeavesNoOrphans(t *testing.T) {
	t.Parallel()
	f := standardFixture(t, testkit.FreeAddr(t))
	stderr := &testkit.LockedBuffer{}
	cmd := exec.Command(binary, "serve", "--config", f.config)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// serve starts its upstreams in the background: wait until both are
	// ready, not only until it listens, before looking for their processes.
	testkit.Eventually(t, 30*time.Second, "both upstreams ready", func() bool { return strings.Count(stderr.String(), "upstream ready") >= 2 })
	children := descendants(cmd.Process.Pid)
	if len(children) < 2 {
		t.Fatalf("found %d processes under mcpwarden, want its two node upstreams", len(children))
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("mcpwarden did not exit within 15s of SIGTERM\n%s", stderr.String())
	}
	testkit.Eventually(t, 10*time.Second, "every upstream process gone", func() bool {
		for _, pid := range children {
			if alive(pid) {
				return false
			}
		}
		return true
	})
}

// alive reports whether pid is a running, not zombie, process.
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(fields) > 0 && fields[0] != "Z"
}

func TestShutdownLetsACallInProgressFinish(t *testing.T) {
	t.Parallel()
	f := everythingFixture(t)
	c := connectStdio(t, f, client.WithLegacyProtocolOnly())
	listedNames(t, c) // the upstream is up: a call waiting for it to start is not yet in progress
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{
			Name: "everything__trigger-long-running-operation", Arguments: map[string]any{"duration": 2, "steps": 2},
		}})
		if err != nil {
			res = mcp.NewToolResultError(err.Error())
		}
		done <- res
	}()
	time.Sleep(700 * time.Millisecond)
	if err := signalPID(f.pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-done:
		if res.IsError {
			t.Errorf("the call in progress at SIGTERM was cut: %s", testkit.Text(res))
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the call in progress at SIGTERM never returned")
	}
	if n := len(readAudit(t, f.auditPath, "result")); n != 1 {
		t.Errorf("audit has %d result events, want the finished call's", n)
	}
}
