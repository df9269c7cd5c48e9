package proxy

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// A resumableUpstream is a pushingUpstream whose streams can be resumed:
// its mcp-go server records every event it sends on an SSE stream in an
// event store, and replays what followed an event to a GET carrying
// Last-Event-ID. hs is its HTTP server, whose connections a test cuts;
// resumedFrom holds the Last-Event-ID of every GET it was sent.
type resumableUpstream struct {
	*pushingUpstream
	hs *httptest.Server

	mu          sync.Mutex
	resumedFrom []string
}

func newResumableUpstream(t *testing.T) (*resumableUpstream, upstream.Spec) {
	t.Helper()
	u := &resumableUpstream{pushingUpstream: &pushingUpstream{sessions: make(chan server.ClientSession, 4)}}
	hooks := &server.Hooks{}
	hooks.AddOnRegisterSession(func(_ context.Context, s server.ClientSession) { u.sessions <- s })
	u.srv = server.NewMCPServer("resumer", "1.0", server.WithToolCapabilities(true), server.WithLogging(), server.WithHooks(hooks))
	u.srv.AddTool(mcp.NewTool("echo", mcp.WithString("text")), testkit.Echo)
	h := server.NewStreamableHTTPServer(u.srv, server.WithEventStore(server.NewInMemoryEventStore()))
	u.hs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get("Last-Event-ID"); r.Method == http.MethodGet && id != "" {
			u.mu.Lock()
			u.resumedFrom = append(u.resumedFrom, id)
			u.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(u.hs.Close)
	return u, upstream.Spec{Transport: upstream.TransportHTTP, URL: u.hs.URL + "/mcp"}
}

// resumes is how many GETs carrying Last-Event-ID the upstream was sent.
func (u *resumableUpstream) resumes() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.resumedFrom)
}

// logsOf connects a client of the handshake to srv that takes every log
// level, and returns the texts of the log messages it is sent.
func logsOf(t *testing.T, srv *Server) <-chan string {
	t.Helper()
	logged := make(chan string, 16)
	c := testkit.Connect(t, srv.MCP(), "2025-11-25", client.WithLegacyProtocolOnly())
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationMessage) {
			logged <- mustJSON(t, n.Params.AdditionalFields)
		}
	})
	if err := c.SetLevel(t.Context(), mcp.SetLevelRequest{Params: mcp.SetLevelParams{Level: mcp.LoggingLevelDebug}}); err != nil {
		t.Fatal(err)
	}
	return logged
}

// awaitLog waits for a log message containing text.
func awaitLog(t *testing.T, logged <-chan string, text string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case got := <-logged:
			if strings.Contains(got, text) {
				return
			}
		case <-timeout:
			t.Fatalf("the log message %q never reached the client", text)
		}
	}
}

func TestHTTPUpstreamGetStreamResumesFromLastEventID(t *testing.T) {
	t.Parallel()
	u, spec := newResumableUpstream(t)
	srv, _, _ := proxyFor(t, spec, allowAll)
	up := u.session(t)
	logged := logsOf(t, srv)
	// The first message proves the GET stream is open, and gives mcpwarden
	// an event id to resume from.
	if err := u.srv.SendLogMessageToClient(up, mcp.NewLoggingMessageNotification(mcp.LoggingLevelInfo, "resumer", "before the break")); err != nil {
		t.Fatal(err)
	}
	awaitLog(t, logged, "before the break")

	// The connection breaks, and the server sends while no stream is
	// attached: only a GET resuming from the last event mcpwarden saw is
	// replayed what it missed; a fresh GET would only get what follows.
	u.hs.CloseClientConnections()
	if err := u.srv.SendLogMessageToClient(up, mcp.NewLoggingMessageNotification(mcp.LoggingLevelWarning, "resumer", "while the stream was down")); err != nil {
		t.Fatal(err)
	}
	awaitLog(t, logged, "while the stream was down")
	if u.resumes() == 0 {
		t.Error("the message arrived, but no GET carried Last-Event-ID")
	}

	// The resumed stream is the live one from then on.
	if err := u.srv.SendLogMessageToClient(up, mcp.NewLoggingMessageNotification(mcp.LoggingLevelInfo, "resumer", "after the resumption")); err != nil {
		t.Fatal(err)
	}
	awaitLog(t, logged, "after the resumption")
}

func TestHTTPUpstreamCallSurvivesItsResponseStreamBreaking(t *testing.T) {
	t.Parallel()
	u, spec := newResumableUpstream(t)
	started, finish := make(chan struct{}), make(chan struct{})
	u.srv.AddTool(mcp.NewTool("slow"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		// A request of the server's first, so the answer is a stream with
		// an event id: mcp-go sends it on the call's stream (a notification
		// may go on the GET stream instead).
		if _, err := u.srv.RequestElicitation(ctx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{Message: "go on?", RequestedSchema: map[string]any{"type": "object"}}}); err != nil {
			return nil, err
		}
		close(started)
		<-finish
		return mcp.NewToolResultText("done after the break"), nil
	})
	srv, _, _ := proxyFor(t, spec, allowAll)
	u.session(t)
	c := testkit.Connect(t, srv.MCP(), "2025-11-25", client.WithElicitationHandler(&human{}), client.WithLegacyProtocolOnly())
	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "up__slow"}})
		done <- outcome{res, err}
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the call never reached the upstream")
	}
	u.hs.CloseClientConnections()
	close(finish)
	got := <-done
	if got.err != nil {
		t.Fatalf("the call failed when its response stream broke: %v", got.err)
	}
	if text := testkit.Text(got.res); got.res.IsError || text != "done after the break" {
		t.Errorf("the call's result = %q (isError %v), want the upstream's answer replayed", text, got.res.IsError)
	}
	if u.resumes() == 0 {
		t.Error("the answer arrived, but no GET carried Last-Event-ID")
	}
}

func TestHTTPUpstreamRequestSentWhileTheGetStreamWasDownReachesTheClient(t *testing.T) {
	t.Parallel()
	u, spec := newResumableUpstream(t)
	srv, _, sink := proxyFor(t, spec, allowAll)
	up := u.session(t)
	h := &human{}
	c := testkit.Connect(t, srv.MCP(), "2025-11-25", client.WithElicitationHandler(h), client.WithLegacyProtocolOnly())
	if err := c.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(up, 15*time.Second)
	defer cancel()
	// Outside any call, so only the GET stream can carry them. The first
	// proves it open; the second is sent while it is down, and only its
	// resumption replays it.
	for i, msg := range []string{"while open", "while down"} {
		if i == 1 {
			u.hs.CloseClientConnections()
		}
		res, err := u.srv.RequestElicitation(ctx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{Message: msg, RequestedSchema: map[string]any{"type": "object"}}})
		if err != nil {
			t.Fatalf("the upstream's elicitation sent %s: %v", msg, err)
		}
		if res.Action != mcp.ElicitationResponseActionDecline {
			t.Errorf("the upstream got %q, want the client's decline", res.Action)
		}
	}
	if got := h.seen(); len(got) != 2 || got[1] != "[up] while down" {
		t.Errorf("the client was shown %q, want both elicitations, marked as the server's", got)
	}
	if ev := decisionsOf(t, sink, "mcp:up:elicitation/create"); len(ev) != 2 || ev[1].Decision != "allow" {
		t.Errorf("decisions = %+v, want each elicitation decided and allowed, the replayed one too", ev)
	}
	if u.resumes() == 0 {
		t.Error("the elicitation arrived, but no GET carried Last-Event-ID")
	}
}
