package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/proxy/stdio"
	"github.com/mcpwarden/mcpwarden/rules"
)

// results returns the result events the sink holds.
func (m *memorySink) results(t *testing.T) []audit.Event {
	t.Helper()
	var out []audit.Event
	for _, e := range m.events(t) {
		if e.Event == audit.KindResult {
			out = append(out, e)
		}
	}
	return out
}

// TestCancelledStdioRequestGetsNoResponse: MCP says a request the client
// cancelled (notifications/cancelled) SHOULD NOT be answered. The call is
// cancelled upstream and audited, and the client hears nothing of it.
func TestCancelledStdioRequestGetsNoResponse(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, allowAllServers, Options{})
	send, next := rawStdio(t, e.srv)
	initializeStdio(t, send, next, `{}`)
	send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"fs__hold","arguments":{}}}`)
	<-e.fs.entered
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"the user gave up"}}`)
	testkit.Eventually(t, 10*time.Second, "the cancelled call's result event", func() bool { return len(e.sink.results(t)) == 1 })
	for i := range 3 {
		send(`{"jsonrpc":"2.0","id":"after%d","method":"ping"}`, i)
		if m := next(); m["id"] != fmt.Sprintf("after%d", i) {
			t.Fatalf("got %.300s, want only the ping's answer: the cancelled request gets none", mustJSON(t, m))
		}
	}
}

// TestStdioClientLeavingMidResultEndsTheCallsWithTheirResultEvents: a
// client that closes its read end while calls are in flight makes the
// next write fail. That ends the connection, although its input is still
// open: the calls still in flight are cancelled, and each has its result
// event, whose error says the client left.
func TestStdioClientLeavingMidResultEndsTheCallsWithTheirResultEvents(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, allowAllServers, Options{})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	t.Cleanup(func() { inW.Close() })
	done := make(chan error, 1)
	go func() { done <- ServeStdio(t.Context(), e.srv, inR, outW) }()
	out := bufio.NewReader(outR)
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if _, err := out.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fs__hold","arguments":{}}}`)
	<-e.fs.entered
	outR.Close() // the client stops reading for good
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fs__echo","arguments":{"text":"hi"}}}`)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ServeStdio = %v, want nil: a client that left is the end of the connection", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeStdio went on serving a client whose end of the connection is closed")
	}
	results := e.sink.results(t)
	if len(results) != 2 {
		t.Fatalf("%d result events (%+v), want one for each of the 2 calls", len(results), results)
	}
	for _, r := range results {
		if r.Tool == "mcp:fs:hold" && !strings.Contains(r.Error, "client left") {
			t.Errorf("the result event of the call in flight says %q, want that the client left", r.Error)
		}
	}
}

// TestSigtermWithANonReadingClientExitsWithinGrace: a client that stops
// reading fills the pipe, so the proxy's writes block. Shutdown (Drain
// with its grace, then the end of serving) must not wait on them:
// ServeStdio returns within the grace and a little more.
func TestSigtermWithANonReadingClientExitsWithinGrace(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, allowAllServers, Options{})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe() // unbuffered: a write blocks until read
	t.Cleanup(func() { inW.Close(); outR.Close() })
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	done := make(chan error, 1)
	go func() { done <- ServeStdio(ctx, e.srv, inR, outW) }()
	out := bufio.NewReader(outR)
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if _, err := out.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	// The client reads nothing more: every answer blocks.
	for i := range 8 {
		fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"fs__echo","arguments":{"text":"hi"}}}`+"\n", i+1)
	}
	testkit.Eventually(t, 10*time.Second, "the calls answered upstream", func() bool { return len(e.sink.results(t)) == 8 })

	const grace = 300 * time.Millisecond
	start := time.Now()
	graceCtx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	e.srv.Drain(graceCtx) // SIGTERM
	stop()                // then serving stops, as app.Serve does
	select {
	case <-done:
	case <-time.After(grace + 5*time.Second):
		t.Fatalf("ServeStdio did not return %s after shutdown began (grace %s) with a client that does not read", time.Since(start).Round(time.Millisecond), grace)
	}
	took := time.Since(start)
	t.Logf("ServeStdio returned %s after shutdown began (grace %s, flush wait %s)", took.Round(time.Millisecond), grace, stdio.FlushWait)
	if took > grace+2*time.Second {
		t.Errorf("ServeStdio returned %s after shutdown began, want within the %s grace and 2 s", took, grace)
	}
}

// TestSigtermWithANonReadingClientWaitingOnAnAskEndsAtTheGrace is the
// next variant: the call in progress is itself blocked writing to the
// client (its elicitation/create, which the client does not read). At the
// end of the grace the call is cancelled and stops waiting on the write,
// so Drain ends then, not cancelWait (5 s) later.
func TestSigtermWithANonReadingClientWaitingOnAnAskEndsAtTheGrace(t *testing.T) {
	t.Parallel()
	spec := rules.Spec{Global: rules.PolicySpec{Ask: []string{"mcp:fs:echo"}}}
	e := newCatalogEnv(t, spec, Options{})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe() // unbuffered: a write blocks until read
	t.Cleanup(func() { inW.Close(); outR.Close() })
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	done := make(chan error, 1)
	go func() { done <- ServeStdio(ctx, e.srv, inR, outW) }()
	out := bufio.NewReader(outR)
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"1"}}}`)
	if _, err := out.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fs__echo","arguments":{"text":"hi"}}}`)
	testkit.Eventually(t, 10*time.Second, "the call in progress", func() bool {
		return e.srv.drain.Active() == 1
	})

	const grace = 300 * time.Millisecond
	start := time.Now()
	graceCtx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	e.srv.Drain(graceCtx)
	drained := time.Since(start)
	stop()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("ServeStdio did not return after shutdown")
	}
	t.Logf("Drain returned %s after it began (grace %s), ServeStdio %s", drained.Round(time.Millisecond), grace, time.Since(start).Round(time.Millisecond))
	if drained > grace+2*time.Second {
		t.Errorf("Drain returned %s after it began, want within the %s grace and 2 s: the call blocked writing its ask waited for cancelWait", drained, grace)
	}
}
