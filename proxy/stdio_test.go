package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/proxy/stdio"
	"github.com/mcpwarden/mcpwarden/rules"
)

// rawStdio drives ServeStdio line by line: send writes one line, next
// returns the next message the proxy writes other than a notification
// (responses, its own requests, and any line that is not JSON), failing
// the test after 10 s.
func rawStdio(t *testing.T, srv *Server) (send func(format string, args ...any), next func() map[string]any) {
	t.Helper()
	inW, outR := stdioPipes(t, srv)
	msgs := make(chan map[string]any, 2*stdio.MaxRequests)
	go func() {
		lines := bufio.NewScanner(outR)
		lines.Buffer(nil, 16<<20)
		for lines.Scan() {
			var m map[string]any
			if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
				m = map[string]any{"unparsable": lines.Text()}
			}
			if _, hasID := m["id"]; m["method"] != nil && !hasID {
				continue // a notification
			}
			msgs <- m
		}
	}()
	send = func(format string, args ...any) {
		t.Helper()
		if _, err := fmt.Fprintf(inW, format+"\n", args...); err != nil {
			t.Fatal(err)
		}
	}
	next = func() map[string]any {
		t.Helper()
		select {
		case m := <-msgs:
			return m
		case <-time.After(10 * time.Second):
			t.Fatal("nothing more came from the proxy")
			return nil
		}
	}
	return send, next
}

// initializeStdio runs the handshake over a raw stdio connection, with the
// client capabilities given.
func initializeStdio(t *testing.T, send func(string, ...any), next func() map[string]any, capabilities string) {
	t.Helper()
	send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":%s,"clientInfo":{"name":"raw","version":"1"}}}`, capabilities)
	if m := next(); m["id"] != "init" || m["result"] == nil {
		t.Fatalf("initialize answered %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// mcp-go's stdio transport served tool calls on five workers, so five
// calls waiting (on an ask, or a slow tool) held up every other call of
// the client until one ended.
func TestStdioHeldCallsDoNotHoldUpOtherCalls(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, allowAllServers, Options{})
	send, next := rawStdio(t, e.srv)
	initializeStdio(t, send, next, `{}`)
	drainEntered(t, e.fs)
	const held = 12
	for i := range held {
		send(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"fs__hold","arguments":{}}}`, i+1)
	}
	send(`{"jsonrpc":"2.0","id":"quick","method":"tools/call","params":{"name":"fs__echo","arguments":{"text":"hi"}}}`)
	if m := next(); m["id"] != "quick" {
		t.Fatalf("got %v first, want the quick call's answer while %d calls are held", m, held)
	}
	close(e.fs.release)
	for range held {
		if m := next(); m["result"] == nil {
			t.Errorf("a held call failed: %v", m)
		}
	}
}

// Requests beyond stdio.MaxRequests are refused, not queued: the reader
// goes on, so the answer that frees one still gets through. Here each
// request is held by an ask waiting for the human's answer.
func TestStdioRequestsBeyondTheBoundAreRefusedAndReadingGoesOn(t *testing.T) {
	t.Parallel()
	spec := rules.Spec{Global: rules.PolicySpec{Ask: []string{"mcp:fs:echo"}}}
	e := newCatalogEnv(t, spec, Options{})
	send, next := rawStdio(t, e.srv)
	initializeStdio(t, send, next, `{"elicitation":{}}`)
	for i := range stdio.MaxRequests {
		send(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"fs__echo","arguments":{"text":"hi"}}}`, i+1)
	}
	var asks []map[string]any
	for len(asks) < stdio.MaxRequests {
		if m := next(); m["method"] == "elicitation/create" {
			asks = append(asks, m)
		} else {
			t.Fatalf("got %.300s while the calls wait on their asks", mustJSON(t, m))
		}
	}
	send(`{"jsonrpc":"2.0","id":"over","method":"ping"}`)
	m := next()
	if text := mustJSON(t, m); m["id"] != "over" || !strings.Contains(text, "requests of this client are in flight already") {
		t.Fatalf("got %.300s, want the request over the bound refused", text)
	}
	send(`{"jsonrpc":"2.0","id":%s,"result":{"action":"decline"}}`, mustJSON(t, asks[0]["id"]))
	if m := next(); m["id"] == nil || !strings.Contains(mustJSON(t, m), "isError") {
		t.Fatalf("got %.300s, want the declined call refused", mustJSON(t, m))
	}
	send(`{"jsonrpc":"2.0","id":"after","method":"ping"}`)
	if m := next(); m["id"] != "after" || m["result"] == nil {
		t.Fatalf("got %.300s, want the ping answered once a request ended", mustJSON(t, m))
	}
}

func TestStdioMalformedLinesGetAParseErrorAndReadingGoesOn(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, allowAllServers, Options{})
	send, next := rawStdio(t, e.srv)
	for _, line := range []string{`not json`, `{"jsonrpc":"2.0","id":1,"method":`, `{"jsonrpc":"2.0","id":1,"method":5}`} {
		send("%s", line)
		m := next()
		if code, _ := m["error"].(map[string]any)["code"].(float64); m["id"] != nil || code != -32700 {
			t.Errorf("%s: got %v, want a parse error with a null id", line, m)
		}
	}
	send("")
	send("   ")
	send(`{"jsonrpc":"2.0","id":7,"result":{}}`) // answers nothing the proxy asked
	send(`{"jsonrpc":"2.0","id":8,"method":"ping"}`)
	if m := next(); m["id"] != 8.0 || m["result"] == nil {
		t.Errorf("got %v, want the ping answered", m)
	}
}

// The proxy's own requests to a stdio client (here an upstream's
// elicitation, relayed) are matched to the client's answers by id,
// whatever order they come in, and an error answer is an error.
func TestStdioClientAnswersReachTheRequestsTheyAnswer(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, allowAllServers, Options{})
	send, next := rawStdio(t, e.srv)
	initializeStdio(t, send, next, `{"elicitation":{}}`)
	send(`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"fs__phish","arguments":{"message":"first"}}}`)
	first := next()
	send(`{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"fs__phish","arguments":{"message":"second"}}}`)
	second := next()
	for _, m := range []map[string]any{first, second} {
		if m["method"] != "elicitation/create" {
			t.Fatalf("got %v, want the upstream's elicitation relayed to the client", m)
		}
	}
	if mustJSON(t, first["id"]) == mustJSON(t, second["id"]) {
		t.Fatalf("two requests to the client share the id %v", first["id"])
	}
	send(`{"jsonrpc":"2.0","id":%s,"error":{"code":-1,"message":"declined by the test"}}`, mustJSON(t, second["id"]))
	send(`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{}}}`, mustJSON(t, first["id"]))
	got := map[any]string{}
	for range 2 {
		m := next()
		got[m["id"]] = mustJSON(t, m["result"])
	}
	if !strings.Contains(got["a"], "accept") {
		t.Errorf("the first call got %s, want the client's accept", got["a"])
	}
	if !strings.Contains(got["b"], "declined by the test") || !strings.Contains(got["b"], `"isError":true`) {
		t.Errorf("the second call got %s, want the client's error", got["b"])
	}
}

// A request of the proxy's to a client that goes away ends at once, and
// ServeStdio returns.
func TestStdioClientLeavingEndsTheRequestsWaitingOnIt(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, allowAllServers, Options{})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- ServeStdio(t.Context(), e.srv, inR, outW) }()
	out := bufio.NewScanner(outR)
	go func() {
		for out.Scan() {
			if strings.Contains(out.Text(), "elicitation/create") {
				inW.Close() // the client leaves without answering
			}
		}
	}()
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"1"}}}`)
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fs__phish","arguments":{}}}`)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ServeStdio = %v, want nil when the client ends its input", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeStdio did not return after the client left")
	}
	outR.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := e.srv.MCP().RegisterSession(ctx, idSession(stdio.SessionID)); err != nil {
		t.Errorf("the stdio session is still registered after the client left: %v", err)
	}
}

// FuzzStdioLines serves arbitrary input over stdio to its end: ServeStdio
// returns nil, every message written is one whole JSON-RPC object on its
// own line, every response carries an id that was sent (or null), and the
// session is gone afterwards (the next input registers it again).
func FuzzStdioLines(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"1"}}}` + "\n" +
			`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fs__echo","arguments":{"text":"hi"}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n" + `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}`,
		`{"jsonrpc":"2.0","id":null,"method":"tools/call"}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/list"}` + "\n\n  \n" + `not json` + "\n" + `[1,2]`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fs__echo","arguments":{"text":"hi"}}}` + "\n" +
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId": 2 ,"reason":"x"}}` + "\n" +
			`{"jsonrpc":"2.0","id":"2","method":"ping"}`,
	} {
		f.Add([]byte(seed + "\n"))
	}
	e := newCatalogEnv(f, allowAllServers, Options{})
	f.Fuzz(func(t *testing.T, data []byte) {
		var out bytes.Buffer
		if err := ServeStdio(t.Context(), e.srv, bytes.NewReader(data), &out); err != nil {
			t.Fatalf("ServeStdio = %v", err)
		}
		sent := map[string]bool{"null": true}
		for line := range bytes.Lines(data) {
			var m struct{ ID json.RawMessage }
			if json.Unmarshal(line, &m) == nil && m.ID != nil {
				sent[string(compactJSON(m.ID))] = true
			}
		}
		for line := range bytes.Lines(out.Bytes()) {
			var m struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Method  string          `json:"method"`
			}
			if !bytes.HasSuffix(line, []byte("\n")) || json.Unmarshal(line, &m) != nil || m.JSONRPC != "2.0" {
				t.Fatalf("wrote %q, not one JSON-RPC message on its line", line)
			}
			if m.Method == "" && m.ID != nil && !sent[string(compactJSON(m.ID))] {
				t.Errorf("answered id %s, which was never sent", m.ID)
			}
		}
	})
}

// compactJSON is the JSON value raw holds, as encoding/json writes it
// once decoded (as mcp-go echoes an id back), or raw when it is not JSON.
func compactJSON(raw []byte) []byte {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	b, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return b
}

// An idSession is a bare client session with the given ID, to see whether
// the ID is free.
type idSession string

func (idSession) Initialize()                                         {}
func (idSession) Initialized() bool                                   { return false }
func (idSession) NotificationChannel() chan<- mcp.JSONRPCNotification { return nil }
func (s idSession) SessionID() string                                 { return string(s) }
