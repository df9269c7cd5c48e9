package testkit

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/haproxy"
)

// An HAProxy is an haproxy process a test started on a free loopback
// port: a plain HTTP load balancer doing round robin over its backends,
// request by request, with no affinity (no cookies, no stickiness). A
// backend that refuses connections is taken out by a TCP health check
// every 200ms, and a request whose connection to a backend fails is sent
// to another one; a request already sent is never sent again, so a call
// in flight on a backend that dies fails instead of running twice. Each
// request gets a connection of its own to its backend (http-reuse never). It is
// stopped when the test ends.
type HAProxy struct {
	addr string
}

// StartHAProxy starts HAProxy in front of backends (host:port each) and
// waits until it accepts connections. A missing HAProxy fails the test
// (it is not skipped): .ci/setup installs Debian's package.
func StartHAProxy(t testing.TB, backends ...string) *HAProxy {
	t.Helper()
	if _, err := os.Stat(haproxy.Bin); err != nil {
		t.Fatalf("haproxy is not installed (%v): run .ci/setup, which installs it", err)
	}
	if len(backends) == 0 {
		t.Fatal("StartHAProxy: no backends")
	}
	h := &HAProxy{addr: FreeAddr(t)}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(cfg, []byte(haproxy.Config(h.addr, backends)), 0o600); err != nil {
		t.Fatal(err)
	}
	out := &LockedBuffer{}
	// -db: stay in the foreground, one process.
	cmd := exec.Command(haproxy.Bin, "-db", "-f", cfg)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting haproxy: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("haproxy output:\n%s", out.String())
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case err := <-done:
			t.Fatalf("haproxy exited at start: %v\n%s", err, out.String())
		default:
		}
		if c, err := net.DialTimeout("tcp", h.addr, 200*time.Millisecond); err == nil {
			c.Close()
			return h
		}
		if time.Now().After(deadline) {
			t.Fatalf("haproxy did not listen on %s within 10s\n%s", h.addr, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Addr is the balancer's host:port.
func (h *HAProxy) Addr() string { return h.addr }

// URL is http://Addr followed by path.
func (h *HAProxy) URL(path string) string { return "http://" + h.addr + path }
