package testkit

import (
	"bufio"
	"net"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// A RedisServer is a redis-server process a test started, on a free
// loopback port with its files in a temporary directory and persistence
// off. It is stopped when the test ends.
type RedisServer struct {
	t    testing.TB
	bin  string
	dir  string
	addr string
	args []string // extra redis-server arguments

	mu  sync.Mutex
	cmd *exec.Cmd // nil while killed
}

// StartRedis starts a redis-server for the test, with args added to its
// command line ("--requirepass", "pw"), and waits until it answers PING.
// A missing redis-server fails the test (it is not skipped): .ci/setup
// installs it.
func StartRedis(t testing.TB, args ...string) *RedisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server is not installed (%v): run .ci/setup, which installs it", err)
	}
	r := &RedisServer{t: t, bin: bin, dir: t.TempDir(), addr: FreeAddr(t), args: args}
	t.Cleanup(r.Kill)
	r.Restart()
	return r
}

// Addr is the server's host:port.
func (r *RedisServer) Addr() string { return r.addr }

// URL is the server's redis:// URL.
func (r *RedisServer) URL() string { return "redis://" + r.addr }

// Kill ends the server with SIGKILL, as a crash would, and waits for it.
// Killing a killed server does nothing.
func (r *RedisServer) Kill() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
	r.cmd = nil
}

// Restart starts the server again on the same address (after Kill), empty,
// and waits until it answers PING.
func (r *RedisServer) Restart() {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd != nil {
		return
	}
	host, port, err := net.SplitHostPort(r.addr)
	if err != nil {
		r.t.Fatalf("splitting %q: %v", r.addr, err)
	}
	args := append([]string{"--bind", host, "--port", port, "--dir", r.dir,
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning"}, r.args...)
	cmd := exec.Command(r.bin, args...)
	out := &LockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		r.t.Fatalf("starting redis-server: %v", err)
	}
	r.cmd = cmd
	deadline := time.Now().Add(10 * time.Second)
	for !ping(r.addr) {
		if time.Now().After(deadline) {
			r.t.Fatalf("redis-server on %s did not answer PING within 10s; its output:\n%s", r.addr, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ping reports whether a Redis server at addr answers PING (or asks for
// a password first, which also says it is up).
func ping(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && (strings.HasPrefix(line, "+PONG") || strings.HasPrefix(line, "-NOAUTH"))
}
