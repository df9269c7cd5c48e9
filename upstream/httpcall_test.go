package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// scriptedCalls is a streamable HTTP upstream whose tools/calls of tools
// named "scripted-…" are answered as the name says; everything else goes
// to mcp-go's server. It counts the calls it gets, and takes the answers
// the client POSTs to its requests.
type scriptedCalls struct {
	h         http.Handler
	mu        sync.Mutex
	calls     map[string]int
	responses chan []byte
	fuzzed    scriptedAnswer // the answer to "scripted-fuzzed"
}

// A scriptedAnswer is an HTTP answer whose body has the call's id in
// place of each "ID".
type scriptedAnswer struct {
	status      int
	contentType string
	body        string
}

func newScriptedCalls() *scriptedCalls {
	return &scriptedCalls{
		h:         mcpserver.NewStreamableHTTPServer(newStandIn(1)),
		calls:     map[string]int{},
		responses: make(chan []byte, 16),
	}
}

const scriptedResult = `{"content":[{"type":"text","text":"scripted"}]}`

func (s *scriptedCalls) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		s.h.ServeHTTP(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	_ = json.Unmarshal(body, &msg)
	if msg.Method == "" && msg.ID != nil { // the client's answer to a request of ours
		select {
		case s.responses <- body:
		default: // a fuzzed request's
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	name, scripted := strings.CutPrefix(msg.Params.Name, "scripted-")
	if msg.Method != string(mcp.MethodToolsCall) || !scripted {
		s.h.ServeHTTP(w, r)
		return
	}
	s.mu.Lock()
	s.calls[name]++
	fuzzed := s.fuzzed
	s.mu.Unlock()
	id := string(msg.ID)
	reply := func(contentType string, status int, body string) {
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
	event := func(data string) {
		fmt.Fprintf(w, "event: message\ndata: %s\n\n", data)
		w.(http.Flusher).Flush()
	}
	switch name {
	case "json":
		reply("application/json", http.StatusOK, `{"jsonrpc":"2.0","id":`+id+`,"result":`+scriptedResult+`}`)
	case "json-charset":
		reply("application/json; charset=UTF-8", http.StatusOK, `{"jsonrpc":"2.0","id":`+id+`,"result":`+scriptedResult+`}`)
	case "json-error":
		reply("application/json", http.StatusOK, `{"jsonrpc":"2.0","id":`+id+`,"error":{"code":-32000,"message":"the tool broke"}}`)
	case "json-other-id":
		reply("application/json", http.StatusOK, `{"jsonrpc":"2.0","id":7,"result":`+scriptedResult+`}`)
	case "json-trailing":
		reply("application/json", http.StatusOK, `{"jsonrpc":"2.0","id":`+id+`,"result":`+scriptedResult+"}\n{}")
	case "json-large":
		reply("application/json", http.StatusOK, `{"jsonrpc":"2.0","id":`+id+`,"result":{"content":[{"type":"text","text":"`+strings.Repeat("x", 4096)+`"}]}}`)
	case "sse":
		w.Header().Set("Content-Type", "text/event-stream")
		event(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}}`)
		event(`{"jsonrpc":"2.0","id":` + id + `,"result":` + scriptedResult + `}`)
	case "sse-request":
		w.Header().Set("Content-Type", "text/event-stream")
		event(`{"jsonrpc":"2.0","id":"asked-` + id + `","method":"ping"}`)
		select {
		case answer := <-s.responses:
			if !bytes.Contains(answer, []byte(`"asked-`+id+`"`)) {
				event(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32000,"message":"answered the wrong request"}}`)
				return
			}
		case <-time.After(5 * time.Second):
			event(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32000,"message":"no answer to ping"}}`)
			return
		}
		event(`{"jsonrpc":"2.0","id":` + id + `,"result":` + scriptedResult + `}`)
	case "sse-large":
		w.Header().Set("Content-Type", "text/event-stream")
		event(`{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", 4096) + `"}]}}`)
	case "500":
		reply("text/plain", http.StatusInternalServerError, "the upstream broke")
	case "500-json":
		reply("application/json", http.StatusInternalServerError, `{"jsonrpc":"2.0","id":`+id+`,"error":{"code":-32603,"message":"internal"}}`)
	case "401":
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+"http://"+r.Host+`/.well-known/oauth-protected-resource"`)
		reply("", http.StatusUnauthorized, "")
	case "plain":
		reply("text/plain", http.StatusOK, "hello")
	case "202":
		reply("", http.StatusAccepted, "")
	case "hang":
		<-r.Context().Done()
	case "fuzzed":
		reply(fuzzed.contentType, fuzzed.status, strings.ReplaceAll(fuzzed.body, "ID", id))
	}
}

func (s *scriptedCalls) count(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[name]
}

// dialScripted opens a session of the handshake to s, counting the
// notifications it gets.
func dialScripted(t testing.TB, s *scriptedCalls, notified *atomic.Int64) *session {
	t.Helper()
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	spec := Spec{Transport: TransportHTTP, URL: hs.URL + "/mcp", MaxResultBytes: 2048}
	sess, err := dial(t.Context(), spec, mcp.Implementation{Name: "test"}, slog.New(slog.DiscardHandler), nil,
		func(mcp.JSONRPCNotification) { notified.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.stop() })
	if _, ok := sess.client.GetTransport().(rawStreamableHTTP); !ok || mcp.IsModernProtocol(sess.protocol) {
		t.Fatalf("the session is %T on %s, not streamable HTTP of the handshake", sess.client.GetTransport(), sess.protocol)
	}
	return sess
}

// callThroughTransport is a tools/call sent as sendCall sent it before
// sendOverHTTP: through mcp-go's transport.
func callThroughTransport(t *testing.T, sess *session, params mcp.CallToolParams) (json.RawMessage, error) {
	var raw json.RawMessage
	req := transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION,
		ID:      mcp.NewRequestId(firstCallID + sess.callIDs.Add(1)),
		Method:  string(mcp.MethodToolsCall),
		Params:  params,
	}
	resp, err := sess.client.GetTransport().SendRequest(withRawResult(t.Context(), &raw), req)
	switch {
	case err != nil:
		return nil, transport.NewError(err)
	case resp.Error != nil:
		return nil, resp.Error.AsError()
	case raw == nil:
		return nil, fmt.Errorf("the upstream answered a tools/call of the handshake with a result that is not one: %.200s", resp.Result)
	}
	return raw, nil
}

type callOutcome struct {
	result string
	err    string
}

// outcomeOf is what a call ended with. Answers over the size cap fail at
// different steps of the two ways, with errors that both wrap
// ErrResultTooLarge, which is all callError reads of them.
func outcomeOf(raw json.RawMessage, err error) callOutcome {
	if errors.Is(err, ErrResultTooLarge) {
		return callOutcome{err: ErrResultTooLarge.Error()}
	}
	if err != nil {
		return callOutcome{err: err.Error()}
	}
	return callOutcome{result: string(raw)}
}

// withoutID is o with the call's id, which the answer may repeat, written
// ID, and the pointers mcp-go may print in an error (of a response it
// could not use) written 0x….
func (o callOutcome) withoutID(id int64) callOutcome {
	text := strconv.FormatInt(id, 10)
	clean := func(s string) string {
		return pointers.ReplaceAllLiteralString(strings.ReplaceAll(s, text, "ID"), "0x…")
	}
	return callOutcome{result: clean(o.result), err: clean(o.err)}
}

var pointers = regexp.MustCompile(`0x[0-9a-f]+`)

// TestHTTPCallsPastTheTransportAnswerAsIt holds a tools/call sent past
// mcp-go's streamable HTTP transport (sendOverHTTP) to what the same call
// sent through it gets, for every kind of answer: the JSON result read
// directly, and what is handed to the transport (event streams with a
// notification or a request of the server's before the result, errors,
// HTTP statuses, other media types, answers over the size cap). The
// upstream gets each call once either way.
func TestHTTPCallsPastTheTransportAnswerAsIt(t *testing.T) {
	t.Parallel()
	srv := newScriptedCalls()
	var notified atomic.Int64
	sess := dialScripted(t, srv, &notified)
	for _, tc := range []struct {
		name     string
		wantErr  bool
		notified int64 // notifications the two calls bring
	}{
		{name: "json"},
		{name: "json-charset"},
		{name: "json-error", wantErr: true},
		{name: "json-other-id"},
		{name: "json-trailing"},
		{name: "json-large", wantErr: true},
		{name: "sse", notified: 2},
		{name: "sse-request"},
		{name: "sse-large", wantErr: true},
		{name: "500", wantErr: true},
		{name: "500-json", wantErr: true},
		{name: "401", wantErr: true},
		{name: "plain", wantErr: true},
		{name: "202", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			params := mcp.CallToolParams{Name: "scripted-" + tc.name, Arguments: map[string]any{"text": "x"}}
			before := notified.Load()
			var raw json.RawMessage
			direct := outcomeOf(raw, sess.sendCall(t.Context(), &raw, params))
			through := outcomeOf(callThroughTransport(t, sess, params))
			if direct != through {
				t.Errorf("past the transport: %+v\nthrough it:        %+v", direct, through)
			}
			if (direct.err != "") != tc.wantErr {
				t.Errorf("outcome %+v, want an error: %v", direct, tc.wantErr)
			}
			if !tc.wantErr && direct.result != scriptedResult {
				t.Errorf("result %s, want the upstream's %s as it came", direct.result, scriptedResult)
			}
			if n := srv.count(tc.name); n != 2 {
				t.Errorf("the upstream got %d calls for two, want each once", n)
			}
			if n := notified.Load() - before; n != tc.notified {
				t.Errorf("%d notifications reached the client, want %d", n, tc.notified)
			}
		})
	}
	if !sess.client.GetTransport().(rawStreamableHTTP).IsOAuthEnabled() && sess.isLost() {
		t.Errorf("the session was lost: %v", sess.lostErr)
	}
}

// TestTooLargeHTTPResultIsErrResultTooLarge checks that an answer over
// max_result_bytes, as JSON or on an event stream, fails the call with
// ErrResultTooLarge past the transport as through it.
func TestTooLargeHTTPResultIsErrResultTooLarge(t *testing.T) {
	t.Parallel()
	var notified atomic.Int64
	sess := dialScripted(t, newScriptedCalls(), &notified)
	for _, name := range []string{"json-large", "sse-large"} {
		var raw json.RawMessage
		if err := sess.sendCall(t.Context(), &raw, mcp.CallToolParams{Name: "scripted-" + name}); !errors.Is(err, ErrResultTooLarge) {
			t.Errorf("%s: %v, want ErrResultTooLarge", name, err)
		}
	}
}

// TestStoppedSessionEndsAnHTTPCallInFlight checks that stopping the
// session ends a call sent past the transport that the upstream has not
// answered, as closing mcp-go's transport ends the requests it sent.
func TestStoppedSessionEndsAnHTTPCallInFlight(t *testing.T) {
	t.Parallel()
	var notified atomic.Int64
	sess := dialScripted(t, newScriptedCalls(), &notified)
	done := make(chan error, 1)
	go func() {
		var raw json.RawMessage
		done <- sess.sendCall(t.Context(), &raw, mcp.CallToolParams{Name: "scripted-hang"})
	}()
	time.Sleep(200 * time.Millisecond)
	sess.stop()
	select {
	case err := <-done:
		if err == nil {
			t.Error("the call succeeded")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the call was still waiting 5 s after its session stopped")
	}
}

// FuzzHTTPCallsPastTheTransportAnswerAsIt holds a call sent past mcp-go's
// streamable HTTP transport to what the same call sent through it gets,
// for any answer: any body, as JSON or as an event stream (without event
// ids, which would have the client poll the server for more), with any of
// a few statuses.
func FuzzHTTPCallsPastTheTransportAnswerAsIt(f *testing.F) {
	for _, seed := range []struct {
		status, contentType uint8
		body                string
	}{
		{0, 0, `{"jsonrpc":"2.0","id":ID,"result":{"content":[]}}`},
		{0, 0, `{"jsonrpc":"2.0","id":ID,"error":{"code":1,"message":"m"}}`},
		{0, 0, `{"jsonrpc":"2.0","id":ID,"result":{"content":[]},"result":{"x":1}}`},
		{0, 0, `{"jsonrpc":"2.0","id":ID,"Result":{"content":[]}}`},
		{0, 0, `{"jsonrpc":"2.0","id":ID,"result":{"resultType":"input_required"}}`},
		{0, 0, `{"jsonrpc":"2.0","id":"ID","result":{}}`},
		{0, 2, `{"jsonrpc":"2.0","id":ID,"result":{}}`},
		{0, 1, "data: {\"jsonrpc\":\"2.0\",\"id\":ID,\"result\":{}}\n\n"},
		{0, 1, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":ID,\"result\":{}}\n\n"},
		{3, 0, `{"jsonrpc":"2.0","id":ID,"error":{"code":1,"message":"m"}}`},
		{2, 3, "nope"},
		{1, 4, ""},
	} {
		f.Add(seed.status, seed.contentType, seed.body)
	}
	srv := newScriptedCalls()
	var notified atomic.Int64
	statuses := []int{http.StatusOK, http.StatusAccepted, http.StatusBadRequest, http.StatusInternalServerError}
	contentTypes := []string{"application/json", "text/event-stream", "application/json; charset=utf-8", "text/plain", ""}
	sess := dialScripted(f, srv, &notified)
	f.Fuzz(func(t *testing.T, status, contentType uint8, body string) {
		answer := scriptedAnswer{status: statuses[int(status)%len(statuses)], contentType: contentTypes[int(contentType)%len(contentTypes)], body: body}
		if answer.contentType == "text/event-stream" {
			var kept []string
			for line := range strings.Lines(body) {
				if !strings.HasPrefix(line, "id:") && !strings.HasPrefix(line, "retry:") {
					kept = append(kept, line)
				}
			}
			answer.body = strings.Join(kept, "")
		}
		srv.mu.Lock()
		srv.fuzzed = answer
		srv.mu.Unlock()
		params := mcp.CallToolParams{Name: "scripted-fuzzed"}
		n := sess.callIDs.Load()
		var raw json.RawMessage
		direct := outcomeOf(raw, sess.sendCall(t.Context(), &raw, params)).withoutID(firstCallID + n + 1)
		through := outcomeOf(callThroughTransport(t, sess, params)).withoutID(firstCallID + n + 2)
		if direct != through {
			t.Errorf("answer %+v\npast the transport: %+v\nthrough it:        %+v", answer, direct, through)
		}
	})
}

// FuzzMediaTypeMatchesMime holds mediaType's shortcut to mime's parser.
func FuzzMediaTypeMatchesMime(f *testing.F) {
	for _, s := range []string{"application/json", "application/json; charset=utf-8", "text/event-stream", "Application/JSON", "text/event-stream; x", "", ";"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, contentType string) {
		want, _, _ := mime.ParseMediaType(contentType)
		if got := mediaType(contentType); got != want {
			t.Errorf("mediaType(%q) = %q, mime says %q", contentType, got, want)
		}
	})
}
