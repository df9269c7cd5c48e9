package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// slowFixture is a world with one upstream, slowserver as "slow", whose
// sleep tool is allowed; upstreamLog is where slowserver writes what it
// received.
func slowFixture(t *testing.T, listen string) (f *fixture, upstreamLog string) {
	t.Helper()
	upstreamLog = filepath.Join(t.TempDir(), "slowserver.log")
	f = newFixture(t, listen,
		// slowserver writes its log outside the fixture's sandbox directory.
		fmt.Sprintf("  slow:\n    command: %q\n    args: [-log, %q]\n    sandbox: { write: [%q] }", slowServer.binary(t), upstreamLog, filepath.Dir(upstreamLog)),
		`  default: deny
  allow:
    - "mcp:slow:sleep"`)
	return f, upstreamLog
}

// A servedProxy is an mcpwarden serve process started by a test, with a
// client connected to it.
type servedProxy struct {
	cmd    *exec.Cmd
	client *client.Client
	stderr *testkit.LockedBuffer
	exited chan error // receives cmd.Wait's result once
}

// serveForShutdown starts mcpwarden serve with a short grace period and
// connects a client over the fixture's transport (stdio, or HTTP when the
// fixture listens on an address).
func serveForShutdown(t *testing.T, f *fixture, grace time.Duration, overHTTP bool) *servedProxy {
	t.Helper()
	p := &servedProxy{stderr: &testkit.LockedBuffer{}, exited: make(chan error, 1)}
	p.cmd = exec.Command(binary, "serve", "--config", f.config, "--shutdown-grace", grace.String())
	p.cmd.Stderr = p.stderr
	p.cmd.SysProcAttr = groupAttr()
	var c *client.Client
	if overHTTP {
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
	} else {
		stdin, err := p.cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := p.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		c = client.NewClient(transport.NewIO(stdout, stdin, io.NopCloser(strings.NewReader(""))))
	}
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() {
		_ = killGroup(p.cmd.Process.Pid)
		if t.Failed() {
			t.Logf("mcpwarden stderr:\n%s", p.stderr.String())
		}
	})
	if overHTTP {
		testkit.Eventually(t, 10*time.Second, "mcpwarden serving HTTP", func() bool { return strings.Contains(p.stderr.String(), "serving streamable HTTP") })
		var err error
		if c, err = client.NewStreamableHttpClient("http://" + listenAddr(t, f) + "/mcp"); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { c.Close() })
	initialize(t, c)
	p.client = c
	return p
}

// sleepCall calls slow__sleep for the given seconds and returns the
// result's text, whether it is an error, and when it came back.
type sleepResult struct {
	text    string
	isError bool
	at      time.Time
}

func (p *servedProxy) sleep(ctx context.Context, seconds int) sleepResult {
	res, err := p.client.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "slow__sleep", Arguments: map[string]any{"seconds": seconds}}})
	if err != nil {
		return sleepResult{text: "client error: " + err.Error(), isError: true, at: time.Now()}
	}
	return sleepResult{text: testkit.Text(res), isError: res.IsError, at: time.Now()}
}

func TestShutdownCancelsCallsAfterGrace(t *testing.T) {
	t.Parallel()
	// Long enough for a call sent after SIGTERM to be refused within it on
	// a loaded machine.
	const grace = 4 * time.Second
	tests := []struct {
		name     string
		overHTTP bool
	}{
		{"over streamable HTTP", true},
		{"over stdio", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			listen := "stdio"
			if tt.overHTTP {
				listen = testkit.FreeAddr(t)
			}
			f, upstreamLog := slowFixture(t, listen)
			p := serveForShutdown(t, f, grace, tt.overHTTP)

			first := make(chan sleepResult, 1)
			go func() { first <- p.sleep(t.Context(), 30) }()
			testkit.Eventually(t, 10*time.Second, "the 30 s call reaching the upstream", func() bool {
				data, _ := os.ReadFile(upstreamLog)
				return strings.Contains(string(data), "tools/call ")
			})
			signalled := time.Now()
			if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}

			// New calls are refused at once, while the first one runs on.
			time.Sleep(300 * time.Millisecond)
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			second := p.sleep(ctx, 1)
			cancel()
			if !second.isError || !strings.Contains(second.text, "mcpwarden is shutting down") || !strings.Contains(second.text, "not forwarded") {
				t.Errorf("a call after SIGTERM: %q, want it refused as shutting down", second.text)
			}
			if took := second.at.Sub(signalled); took > grace {
				t.Errorf("the call after SIGTERM was answered %s after it, want before the %s grace ended", took, grace)
			}

			// At the end of the grace period the call in progress is cancelled.
			var got sleepResult
			select {
			case got = <-first:
			case <-time.After(grace + 15*time.Second):
				t.Fatalf("the 30 s call in progress at SIGTERM was not answered within %s", grace+15*time.Second)
			}
			took := got.at.Sub(signalled)
			t.Logf("call in progress answered %s after SIGTERM (grace %s): %q", took.Round(time.Millisecond), grace, got.text)
			if !got.isError || !strings.Contains(got.text, "mcpwarden is shutting down") || strings.Contains(got.text, "restarting") {
				t.Errorf("the call in progress at SIGTERM got %q, want an error saying mcpwarden is shutting down", got.text)
			}
			if took < grace-200*time.Millisecond || took > grace+5*time.Second {
				t.Errorf("the call in progress was answered %s after SIGTERM, want between the %s grace and 5 s after it", took, grace)
			}

			select {
			case err := <-p.exited:
				exitedAfter := time.Since(signalled)
				t.Logf("mcpwarden exited %s after SIGTERM: %v", exitedAfter.Round(time.Millisecond), err)
				if err != nil {
					var ee *exec.ExitError
					if errors.As(err, &ee) {
						t.Errorf("mcpwarden exited with status %d, want 0", ee.ExitCode())
					} else {
						t.Error(err)
					}
				}
				if exitedAfter > grace+10*time.Second {
					t.Errorf("mcpwarden exited %s after SIGTERM, want within 10 s of the %s grace", exitedAfter, grace)
				}
			case <-time.After(grace + 20*time.Second):
				t.Fatalf("mcpwarden did not exit within %s of SIGTERM", grace+20*time.Second)
			}

			data, err := os.ReadFile(upstreamLog)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(data), "notifications/cancelled") {
				t.Errorf("the upstream never received notifications/cancelled; it received:\n%s", data)
			}
			results := readAudit(t, f.auditPath, "result")
			if len(results) != 1 || !strings.Contains(results[0].Error, "shutting down") {
				t.Errorf("audit result events %+v, want the cancelled call's, saying mcpwarden is shutting down", results)
			}
		})
	}
}

// TestSecondSignalEndsTheGracePeriod: with a long grace period, a second
// SIGTERM cancels the calls in progress at once, as the first would at
// the end of the grace period, and mcpwarden still exits 0.
func TestSecondSignalEndsTheGracePeriod(t *testing.T) {
	t.Parallel()
	const grace = time.Minute
	f, upstreamLog := slowFixture(t, testkit.FreeAddr(t))
	p := serveForShutdown(t, f, grace, true)
	first := make(chan sleepResult, 1)
	go func() { first <- p.sleep(t.Context(), 30) }()
	testkit.Eventually(t, 10*time.Second, "the 30 s call reaching the upstream", func() bool {
		data, _ := os.ReadFile(upstreamLog)
		return strings.Contains(string(data), "tools/call ")
	})
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "shutdown begun", func() bool { return strings.Contains(p.stderr.String(), "shutting down") })
	second := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-first:
		if took := got.at.Sub(second); took > 5*time.Second {
			t.Errorf("the call was answered %s after the second SIGTERM, want within 5 s", took)
		}
		if !got.isError || !strings.Contains(got.text, "mcpwarden is shutting down") {
			t.Errorf("the call in progress got %q, want an error saying mcpwarden is shutting down", got.text)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the call in progress was not answered within 20 s of the second SIGTERM")
	}
	select {
	case err := <-p.exited:
		if err != nil {
			t.Errorf("mcpwarden exited with %v, want status 0", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("mcpwarden did not exit within 20 s of the second SIGTERM")
	}
	if data, _ := os.ReadFile(upstreamLog); !strings.Contains(string(data), "notifications/cancelled") {
		t.Errorf("the upstream never received notifications/cancelled; it received:\n%s", data)
	}
}
