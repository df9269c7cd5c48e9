package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/proxy/stdio"
	"github.com/mcpwarden/mcpwarden/proxy/streamable"
	"github.com/mcpwarden/mcpwarden/proxy/wire"
	"github.com/mcpwarden/mcpwarden/rules"
)

// stdioLines serves srv over stdio with calls (nil: HandleMessage serves
// every request) and returns a function that sends one line and returns
// the next response, skipping notifications.
func stdioLines(t *testing.T, srv *Server, calls wire.CallServer) func(line string) map[string]any {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- stdio.Serve(ctx, srv.mcp, calls, srv.inflight, srv.logger, inR, outW) }()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		outR.Close()
		<-done
	})
	lines := bufio.NewScanner(outR)
	return func(line string) map[string]any {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
		for lines.Scan() {
			var m map[string]any
			if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
				t.Fatalf("unparsable line %q", lines.Text())
			}
			if _, hasID := m["id"]; m["method"] != nil && !hasID {
				continue
			}
			return m
		}
		t.Fatal("the stdio connection ended")
		return nil
	}
}

// TestDirectCallsAnswerAsHandleMessage: a tools/call served without
// mcp-go's HandleMessage gets the response HandleMessage gives it, for
// the calls directCalls serve and for those they leave to it.
func TestDirectCallsAnswerAsHandleMessage(t *testing.T) {
	t.Parallel()
	spec := rules.Spec{Global: rules.PolicySpec{Allow: []string{"mcp:fs:echo"}, Deny: []string{"mcp:fs:phish", "mcp:hidden:*"}}}
	// Two servers: a stdio client is the one session of its server.
	e, twin := newCatalogEnv(t, spec, Options{}), newCatalogEnv(t, spec, Options{})
	served := &servedCalls{CallServer: directCalls{e.srv}}
	direct, mcpgo := stdioLines(t, e.srv, served), stdioLines(t, twin.srv, nil)
	for _, send := range []func(string) map[string]any{direct, mcpgo} {
		send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	}
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fs__echo","arguments":{"text":"hi"}}}`,
		`{"jsonrpc":"2.0","id":"two","method":"tools/call","params":{"name":"fs__echo"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fs__echo","arguments":null}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"fs__echo","arguments":{"text":5}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"fs__echo","arguments":[1]}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"fs__echo","arguments":{"text":"a","text":"b"}}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"fs__echo","arguments":{"text":"hi"},"_meta":{"progressToken":"p"}}}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"fs__phish","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"hidden__echo","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"nosuch__tool"}}`,
		`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"arguments":{}}}`,
		`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":5}`,
		`{"jsonrpc":"1.0","id":13,"method":"tools/call","params":{"name":"fs__echo","arguments":{"text":"hi"}}}`,
		`{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"fs__echo","arguments":{"text":"hi"},"task":{}}}`,
		`{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"fs__echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"name":"fs__echo","arguments":{"text":"hi"},"requestState":"forged"}}`,
		`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"fs__echo","arguments":{"text":"\u0000\ud800"}}}`,
		`{"jsonrpc":"2.0","id":18,"method":"tools/call","params":{"name":"fs__echo","arguments":{"text":"<b>&amp;</b>\u2028"}}}`,
	} {
		got, want := direct(msg), mcpgo(msg)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s\n direct: %.400s\nmcp-go: %.400s", msg, mustJSON(t, got), mustJSON(t, want))
		}
	}
	// The calls of listed tools were served directly; the rest by mcp-go.
	if want := []string{"1", `"two"`, "3", "4", "5", "6", "7", "17", "18"}; !slices.Equal(served.ids, want) {
		t.Errorf("served directly: %v, want %v", served.ids, want)
	}
}

// servedCalls records the ids of the calls its CallServer served.
type servedCalls struct {
	wire.CallServer
	mu  sync.Mutex
	ids []string
}

func (c *servedCalls) ServeCall(ctx context.Context, id json.RawMessage, msg []byte) (mcp.JSONRPCMessage, bool) {
	resp, ok := c.CallServer.ServeCall(ctx, id, msg)
	if ok {
		c.mu.Lock()
		c.ids = append(c.ids, string(id))
		c.mu.Unlock()
	}
	return resp, ok
}

// TestCancelledHTTPCallIsCancelledUpstream: a tools/call served without
// HandleMessage is still cancelled by the client's
// notifications/cancelled, posted on its session; the same id cancelled
// on another session cancels nothing.
func TestCancelledHTTPCallIsCancelledUpstream(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, allowAllServers, Options{})
	h, _, err := streamable.NewHandler(httpHost(e.srv), "127.0.0.1:0", streamable.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	session, other := initializeSession(t, ts), initializeSession(t, ts)

	answered := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+streamable.EndpointPath,
			strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"fs__hold","arguments":{}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(server.HeaderKeySessionID, session)
		req.Header.Set(mcp.HeaderProtocolVersion, "2025-11-25")
		resp, err := ts.Client().Do(req)
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		answered <- err
	}()
	<-e.fs.entered
	cancel := func(session string) {
		resp := post(t, ts, session, map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": map[string]any{"requestId": 7}})
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("notifications/cancelled: status %d", resp.StatusCode)
		}
	}
	cancel(other)
	select {
	case <-answered:
		t.Fatal("another session's notifications/cancelled ended the call")
	case <-time.After(300 * time.Millisecond):
	}
	cancel(session)
	testkit.Eventually(t, 10*time.Second, "the cancelled call's result event", func() bool { return len(e.sink.results(t)) == 1 })
	if err := <-answered; err != nil {
		t.Fatal(err)
	}
	if ev := e.sink.results(t)[0]; ev.Error == "" {
		t.Errorf("result event %+v, want the cancellation as its error", ev)
	}
}

// BenchmarkDirectCall compares a tools/call served by directCalls with
// one served by HandleMessage, on an in-process upstream.
func BenchmarkDirectCall(b *testing.B) {
	e := newCatalogEnv(b, allowAllServers, Options{})
	ctx := e.srv.mcp.WithContext(b.Context(), newBenchSession())
	msg := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fs__echo","arguments":{"text":"hi"}}}`)
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			if _, ok := (directCalls{e.srv}).ServeCall(ctx, json.RawMessage("1"), msg); !ok {
				b.Fatal("not served")
			}
		}
	})
	b.Run("handlemessage", func(b *testing.B) {
		for b.Loop() {
			e.srv.mcp.HandleMessage(ctx, msg)
		}
	})
}

// benchSession is a bare client session for calls made in process.
type benchSession struct{ notes chan mcp.JSONRPCNotification }

func newBenchSession() *benchSession {
	return &benchSession{notes: make(chan mcp.JSONRPCNotification, 16)}
}

func (s *benchSession) SessionID() string { return fmt.Sprintf("bench-%p", s) }
func (s *benchSession) NotificationChannel() chan<- mcp.JSONRPCNotification {
	return s.notes
}
func (*benchSession) Initialize()       {}
func (*benchSession) Initialized() bool { return true }

// FuzzDirectCallsAnswerAsHandleMessage: whatever tools/call directCalls
// serve, they answer as HandleMessage answers it on a twin server: they
// read a message as mcp-go reads it, and leave to it what they do not
// serve.
func FuzzDirectCallsAnswerAsHandleMessage(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fs__echo","arguments":{"text":"hi"}}}`,
		`{"jsonrpc":"2.0","id":1.0,"method":"tools/call","params":{"name":"fs__echo","arguments":{"text":5}}}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"fs__echo","arguments":null,"_meta":{"progressToken":1}}}`,
		`{"jsonrpc":"2.0","id":[],"method":"tools/call","params":{"name":"fs__phish","NAME":"fs__echo"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fs__echo","arguments":{"text":"a"},"task":null}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","Params":{"Name":"fs__echo","Arguments":{"text":"<&>"}}}`,
	} {
		f.Add(seed)
	}
	spec := rules.Spec{Global: rules.PolicySpec{Allow: []string{"mcp:fs:echo"}, Deny: []string{"mcp:fs:phish"}}}
	e, twin := newCatalogEnv(f, spec, Options{}), newCatalogEnv(f, spec, Options{})
	f.Fuzz(func(t *testing.T, msg string) {
		var head wire.Head
		if json.Unmarshal([]byte(msg), &head) != nil || head.Method != string(mcp.MethodToolsCall) || head.ID == nil || string(head.ID) == "null" {
			return // not what a transport hands directCalls
		}
		got, ok := (directCalls{e.srv}).ServeCall(e.srv.mcp.WithContext(t.Context(), newBenchSession()), head.ID, []byte(msg))
		if !ok {
			return
		}
		want := twin.srv.mcp.HandleMessage(twin.srv.mcp.WithContext(t.Context(), newBenchSession()), []byte(msg))
		g, w := decoded(t, got), decoded(t, want)
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s\n direct: %.400s\nmcp-go: %.400s", msg, mustJSON(t, g), mustJSON(t, w))
		}
	})
}

// decoded is msg encoded and decoded again, as a client reads it.
func decoded(t *testing.T, msg mcp.JSONRPCMessage) any {
	t.Helper()
	b, err := json.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return v
}
