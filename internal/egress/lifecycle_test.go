package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// blockingDecider blocks every decision until its ctx ends, counting the
// decisions begun and ended.
type blockingDecider struct{ begun, ended atomic.Int32 }

func (d *blockingDecider) Decide(ctx context.Context, _ Request) Verdict {
	d.begun.Add(1)
	defer d.ended.Add(1)
	<-ctx.Done()
	return Verdict{Decision: Allow} // too late: the proxy must not go ahead
}

// eventually waits up to 10 s for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// dialSend opens a connection to the proxy and sends head.
func dialSend(t *testing.T, proxy, head string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestBlockingDeciderDoesNotLeakGoroutines(t *testing.T) {
	t.Parallel()
	d := &blockingDecider{}
	proxy, p, reps := startProxy(t, d, Options{Resolver: newResolver(nil)})
	var clients []net.Conn
	for range 3 {
		clients = append(clients, dialSend(t, proxy, "CONNECT example.com:443 HTTP/1.1\r\n\r\n"))
	}
	eventually(t, "three decisions to begin", func() bool { return d.begun.Load() == 3 })
	closed := make(chan struct{})
	go func() { p.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return while decisions were blocked")
	}
	// Close waited for every goroutine: the decisions ended, and every
	// connection was reported, before it returned.
	if n := d.ended.Load(); n != 3 {
		t.Errorf("%d decisions ended, want 3", n)
	}
	got := reps.wait(t, 0)
	if len(got) != 3 {
		t.Fatalf("%d reports when Close returned, want 3", len(got))
	}
	for _, rep := range got {
		if rep.Outcome != Refused || !errors.Is(rep.Err, context.Canceled) || rep.Addr.IsValid() {
			t.Errorf("report %+v", rep)
		}
	}
	for _, c := range clients {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if b, err := io.ReadAll(c); err != nil || len(b) != 0 {
			t.Errorf("client read %q, %v; want the connection closed", b, err)
		}
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestServeContextEndEndsBlockedDecisions(t *testing.T) {
	t.Parallel()
	d := &blockingDecider{}
	p := New(d, &Options{Resolver: newResolver(nil)})
	defer p.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- p.Serve(ctx, l) }()
	dialSend(t, l.Addr().String(), "CONNECT example.com:443 HTTP/1.1\r\n\r\n")
	eventually(t, "the decision to begin", func() bool { return d.begun.Load() == 1 })
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve = %v, want nil when its context ends", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return when its context ended")
	}
	if n := d.ended.Load(); n != 1 {
		t.Errorf("%d decisions ended when Serve returned, want 1", n)
	}
}

// echoOutside serves an echo on 127.0.0.2 and returns its port.
func echoOutside(t testing.TB) uint16 {
	l := outsideListener(t, "127.0.0.2")
	testkit.ServeConns(t, l, func(c net.Conn) { _, _ = io.Copy(c, c) })
	return portOf(l)
}

// openTunnel opens a CONNECT tunnel to 127.0.0.2:port and checks it echoes.
func openTunnel(t *testing.T, proxy string, port uint16) net.Conn {
	t.Helper()
	resp, _, c := rawRequest(t, proxy, fmt.Sprintf("CONNECT 127.0.0.2:%d HTTP/1.1\r\n\r\n", port))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT status %d", resp.StatusCode)
	}
	io.WriteString(c, "ping")
	b := make([]byte, 4)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c, b); err != nil || string(b) != "ping" {
		t.Fatalf("echo %q, %v", b, err)
	}
	_ = c.SetReadDeadline(time.Time{})
	return c
}

func TestShutdownWithOpenTunnels(t *testing.T) {
	t.Parallel()
	port := echoOutside(t)
	proxy, p, reps := startProxy(t, &allowAll{}, Options{NamesAddress: named("127.0.0.2")})
	ended := openTunnel(t, proxy, port)
	kept := openTunnel(t, proxy, port)

	shut := make(chan error, 1)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	go func() { shut <- p.Shutdown(ctx) }()
	// A tunnel still carries during a graceful shutdown...
	eventually(t, "the proxy to stop accepting", func() bool {
		c, err := net.Dial("tcp", proxy)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	io.WriteString(kept, "pong")
	b := make([]byte, 4)
	if _, err := io.ReadFull(kept, b); err != nil || string(b) != "pong" {
		t.Errorf("during shutdown: echo %q, %v", b, err)
	}
	// ...one that ends by itself is reported...
	ended.Close()
	// ...and one still open when the grace ends is cut.
	select {
	case err := <-shut:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Shutdown = %v, want the grace's deadline", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown did not return when its grace ended")
	}
	_ = kept.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(kept); err != nil {
		t.Errorf("the kept tunnel was not closed: %v", err)
	}
	// A probe above that the proxy accepted before it stopped accepting
	// sent nothing: a bad request of its own, not one of the tunnels.
	got := reps.waitWhere(t, 2, func(rep Report) bool { return rep.Outcome != BadRequest || rep.Sent+rep.Received > 0 })
	for _, rep := range got {
		if rep.Outcome != Carried || rep.Sent != 4 && rep.Sent != 8 {
			t.Errorf("report %+v", rep)
		}
	}
	if err := p.Shutdown(t.Context()); err != nil {
		t.Errorf("Shutdown again: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("Close after Shutdown: %v", err)
	}
	if err := p.Serve(t.Context(), outsideListener(t, "127.0.0.1")); !errors.Is(err, ErrClosed) {
		t.Errorf("Serve after Shutdown = %v, want ErrClosed", err)
	}
}

func TestIdleTunnelIsClosed(t *testing.T) {
	t.Parallel()
	port := echoOutside(t)
	proxy, _, reps := startProxy(t, &allowAll{}, Options{NamesAddress: named("127.0.0.2"), IdleTimeout: 400 * time.Millisecond})
	c := openTunnel(t, proxy, port)
	// Traffic keeps it open past the idle time...
	for range 4 {
		time.Sleep(150 * time.Millisecond)
		io.WriteString(c, "x")
		b := make([]byte, 1)
		if _, err := io.ReadFull(c, b); err != nil {
			t.Fatalf("an active tunnel was cut: %v", err)
		}
	}
	// ...silence ends it.
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(c); err != nil {
		t.Errorf("the idle tunnel was not closed: %v", err)
	}
	if rep := reps.wait(t, 1)[0]; !errors.Is(rep.Err, errIdle) {
		t.Errorf("report %+v, want an idle error", rep)
	}
}

func TestSilentClientIsCutOffAtHeadTimeout(t *testing.T) {
	t.Parallel()
	d := &allowAll{}
	proxy, _, reps := startProxy(t, d, Options{HeadTimeout: 200 * time.Millisecond})
	c := dialSend(t, proxy, "CONNECT example.com:4") // and nothing more
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(c); err != nil {
		t.Errorf("the slow client was not cut off: %v", err)
	}
	if rep := reps.wait(t, 1)[0]; rep.Outcome != BadRequest {
		t.Errorf("report %+v", rep)
	}
	if len(d.requests()) != 0 {
		t.Errorf("an unfinished head was decided: %v", d.requests())
	}
}

func TestConnectionsBeyondMaxConnsWait(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var begun atomic.Int32
	d := DeciderFunc(func(ctx context.Context, _ Request) Verdict {
		begun.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return Verdict{Reason: "no"}
	})
	proxy, _, reps := startProxy(t, d, Options{MaxConns: 1})
	dialSend(t, proxy, "CONNECT a.test:443 HTTP/1.1\r\n\r\n")
	eventually(t, "the first decision", func() bool { return begun.Load() == 1 })
	dialSend(t, proxy, "CONNECT b.test:443 HTTP/1.1\r\n\r\n")
	time.Sleep(200 * time.Millisecond)
	if n := begun.Load(); n != 1 {
		t.Fatalf("%d decisions begun with MaxConns 1", n)
	}
	close(release)
	eventually(t, "the second decision", func() bool { return begun.Load() == 2 })
	reps.wait(t, 2)
}

func TestMalformedRequestsAreRefusedWith4xx(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, head string
		status     int
	}{
		{"an origin-form request", "GET /secret HTTP/1.1\r\nHost: example.com\r\n\r\n", 400},
		{"an absolute https URL", "GET https://example.com/ HTTP/1.1\r\n\r\n", 400},
		{"an ftp URL", "GET ftp://example.com/ HTTP/1.1\r\n\r\n", 400},
		{"a request line that is not HTTP", "HELLO\r\n\r\n", 400},
		{"an HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 400},
		{"a CONNECT without a port", "CONNECT example.com HTTP/1.1\r\n\r\n", 400},
		{"a CONNECT to port 0", "CONNECT example.com:0 HTTP/1.1\r\n\r\n", 400},
		{"a CONNECT to a port out of range", "CONNECT example.com:70000 HTTP/1.1\r\n\r\n", 400},
		{"a CONNECT with user info", "CONNECT user@example.com:443 HTTP/1.1\r\n\r\n", 400},
		{"a CONNECT with user info hiding the host", "CONNECT example.com:443@127.0.0.1:443 HTTP/1.1\r\n\r\n", 400},
		{"a CONNECT with a path", "CONNECT example.com:443/x HTTP/1.1\r\n\r\n", 400},
		{"a CONNECT in origin form", "CONNECT /example.com:443 HTTP/1.1\r\n\r\n", 400},
		{"an unbracketed IPv6 address", "CONNECT ::1:443 HTTP/1.1\r\n\r\n", 400},
		{"an IPv6 address with a zone", "CONNECT [fe80::1%25eth0]:443 HTTP/1.1\r\n\r\n", 400},
		{"a name ending in a number", "CONNECT 1.2.3.300:443 HTTP/1.1\r\n\r\n", 400},
		{"a name ending in a hex number", "CONNECT 1.2.3.0x1ff:443 HTTP/1.1\r\n\r\n", 400},
		{"a name with a NUL", "CONNECT localhost\x00.example.com:443 HTTP/1.1\r\n\r\n", 400},
		{"a raw UTF-8 name", "CONNECT b\xc3\xbccher.example:443 HTTP/1.1\r\n\r\n", 400},
		{"a name with a backslash", "GET http://example.com\\@127.0.0.1/ HTTP/1.1\r\n\r\n", 400},
		{"user info in an absolute URL", "GET http://user:pw@example.com/ HTTP/1.1\r\n\r\n", 400},
		{"a label longer than 63", "CONNECT " + strings.Repeat("a", 64) + ".com:443 HTTP/1.1\r\n\r\n", 400},
		{"a head longer than the limit", "GET http://example.com/ HTTP/1.1\r\nX: " + strings.Repeat("a", 20<<10) + "\r\n\r\n", 431},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := &allowAll{}
			proxy, _, reps := startProxy(t, d, Options{Resolver: newResolver(nil)})
			resp, body, _ := rawRequest(t, proxy, tt.head)
			if resp.StatusCode != tt.status || !strings.HasPrefix(body, "mcpwarden egress: ") {
				t.Errorf("status %d, body %q; want %d", resp.StatusCode, body, tt.status)
			}
			if rep := reps.wait(t, 1)[0]; rep.Outcome != BadRequest || rep.Err == nil {
				t.Errorf("report %+v", rep)
			}
			if len(d.requests()) != 0 {
				t.Errorf("decided %v", d.requests())
			}
		})
	}
}

func TestServesOnAUnixSocket(t *testing.T) {
	t.Parallel()
	port := echoOutside(t)
	reps := &reports{}
	p := New(&allowAll{}, &Options{NamesAddress: named("127.0.0.2"), Report: reps.add})
	l, err := net.Listen("unix", t.TempDir()+"/egress.sock")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- p.Serve(t.Context(), l) }()
	c, err := net.Dial("unix", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT 127.0.0.2:%d HTTP/1.1\r\n\r\n", port)
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	want := "HTTP/1.1 200 Connection established\r\n\r\n"
	io.WriteString(c, "ping")
	got := make([]byte, len(want)+4)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != want+"ping" {
		t.Fatalf("got %q, %v", got, err)
	}
	c.Close()
	if rep := reps.wait(t, 1)[0]; rep.Outcome != Carried || rep.Sent != 4 || rep.Received != 4 {
		t.Errorf("report %+v", rep)
	}
	p.Close()
	if err := <-served; !errors.Is(err, ErrClosed) {
		t.Errorf("Serve = %v, want ErrClosed", err)
	}
}
