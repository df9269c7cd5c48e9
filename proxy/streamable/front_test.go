package streamable

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/proxy/wire"
)

// frontMCP returns an MCP server with the tools the front's tests call:
// echo answers at once, notify sends the client a progress notification
// first, and elicit asks the client and answers with what it chose (or
// the error its answer was).
func frontMCP() *server.MCPServer {
	s := server.NewMCPServer("front-test", "1", server.WithToolCapabilities(true), server.WithElicitation())
	s.AddTool(mcp.NewTool("echo"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("echoed"), nil
	})
	s.AddTool(mcp.NewTool("notify"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if err := s.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), map[string]any{"progressToken": "t", "progress": 1}); err != nil {
			return nil, err
		}
		return mcp.NewToolResultText("notified"), nil
	})
	s.AddTool(mcp.NewTool("elicit"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := s.RequestElicitation(ctx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{
			Message:         "go on?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}},
		}})
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return mcp.NewToolResultText(string(res.Action)), nil
	})
	return s
}

// frontEndpoints returns the endpoint of a listener (NewHandler, its
// front serving what it takes over) and of mcp-go's own streamable HTTP
// server, each in front of its own frontMCP, so that one exchange can be
// sent to both and their answers compared.
func frontEndpoints(t *testing.T) (listener, mcpgo string) {
	t.Helper()
	ours, _ := frontListener(t)
	theirs := httptest.NewServer(server.NewStreamableHTTPServer(frontMCP(),
		server.WithStateful(true), server.WithStreamableHTTPLogger(slog.New(slog.DiscardHandler))))
	t.Cleanup(theirs.Close)
	return ours, theirs.URL
}

// quietHost is a Host of srv for the local principal that logs and
// audits nothing.
func quietHost(srv *server.MCPServer) Host {
	return Host{
		MCP:         srv,
		Logger:      slog.New(slog.DiscardHandler),
		Budget:      wire.NewBudget(1 << 30),
		PrincipalOf: func(context.Context) string { return principalLocal },
		ProfileOf:   func(context.Context) string { return "" },
		Audit:       func(context.Context, audit.Event) {},
	}
}

// frontListener returns the endpoint of a listener in front of a
// frontMCP, and its sessions.
func frontListener(t *testing.T) (string, *Sessions) {
	t.Helper()
	h, sessions, err := NewHandler(quietHost(frontMCP()), "127.0.0.1:0", Options{})
	if err != nil {
		t.Fatal(err)
	}
	ours := httptest.NewServer(h)
	t.Cleanup(ours.Close)
	return ours.URL + EndpointPath, sessions
}

const frontInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"front","version":"0"}}}`

// frontPost posts body to url on session (none when ""), with the
// protocol version header and Content-Type given, and returns the
// response, whose body the caller closes.
func frontPost(t *testing.T, url, session, contentType, version, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set(server.HeaderKeySessionID, session)
	}
	if version != "" {
		req.Header.Set(mcp.HeaderProtocolVersion, version)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// frontSession initializes a session at url and returns its ID.
func frontSession(t *testing.T, url string) string {
	t.Helper()
	resp := frontPost(t, url, "", "application/json", "", frontInitialize)
	defer resp.Body.Close()
	id := resp.Header.Get(server.HeaderKeySessionID)
	if resp.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("initialize at %s: status %d, session %q", url, resp.StatusCode, id)
	}
	resp = frontPost(t, url, id, "application/json", "2025-11-25", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	resp.Body.Close()
	return id
}

// elicitationID finds the id of an elicitation/create request in an
// event.
var elicitationID = regexp.MustCompile(`^data: \{"jsonrpc":"2.0","id":(\d+),.*"method":"elicitation/create"`)

// frontExchange posts body on a fresh session at url and returns what
// the client sees: the status, the Content-Type and the body, with the ID
// of any elicitation request (which each server numbers its own way)
// written as <elicitation>. An elicitation is answered with answer, the
// result or error member of the client's response ("" answers nothing).
func frontExchange(t *testing.T, url, contentType, version, body, answer string) string {
	t.Helper()
	session := frontSession(t, url)
	resp := frontPost(t, url, session, contentType, version, body)
	defer resp.Body.Close()
	var got strings.Builder
	fmt.Fprintf(&got, "%d %s\n", resp.StatusCode, resp.Header.Get("Content-Type"))
	r := bufio.NewReader(resp.Body)
	for {
		line, err := r.ReadString('\n')
		if m := elicitationID.FindStringSubmatch(line); m != nil && answer != "" {
			a := frontPost(t, url, session, "application/json", "2025-11-25", `{"jsonrpc":"2.0","id":`+m[1]+`,`+answer+`}`)
			b, _ := io.ReadAll(a.Body)
			a.Body.Close()
			fmt.Fprintf(&got, "(answered: %d %s)\n", a.StatusCode, b)
			line = strings.Replace(line, `"id":`+m[1], `"id":<elicitation>`, 1)
		}
		got.WriteString(line)
		if err != nil {
			break
		}
	}
	return got.String()
}

// TestFrontAnswersAsMcpGo sends each exchange to the listener and to
// mcp-go's own streamable HTTP server and wants the same answer from
// both: the requests the front serves itself, and those it leaves to
// mcp-go because mcp-go refuses or answers them its own way.
func TestFrontAnswersAsMcpGo(t *testing.T) {
	t.Parallel()
	const (
		v    = "2025-11-25"
		json = "application/json"
	)
	tests := []struct {
		name, contentType, version, body, answer string
	}{
		{name: "a call is answered with JSON", body: `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo"}}`},
		{name: "a call with a string id is answered with JSON", body: `{"jsonrpc":"2.0","id":"two","method":"tools/call","params":{"name":"echo"}}`},
		{name: "a ping is answered with JSON", body: `{"jsonrpc":"2.0","id":2,"method":"ping"}`},
		{name: "a call that elicits gets the request and then its answer on an event stream", body: `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"elicit"}}`, answer: `"result":{"action":"accept","content":{}}`},
		{name: "an elicitation the client answers with an error fails with mcp-go's words", body: `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"elicit"}}`, answer: `"error":{"code":-1,"message":"no"}`},
		{name: "an unknown method is a JSON-RPC error", body: `{"jsonrpc":"2.0","id":2,"method":"no/such"}`},
		{name: "an unknown tool is a JSON-RPC error", body: `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"nope"}}`},
		{name: "params that are not an object are mcp-go's to refuse", body: `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":[1]}`},
		{name: "a body that is not JSON is a parse error", body: `{"jsonrpc":`},
		{name: "a batch is mcp-go's to refuse", body: `[{"jsonrpc":"2.0","id":2,"method":"ping"}]`},
		{name: "a null id is mcp-go's to serve", body: `{"jsonrpc":"2.0","id":null,"method":"ping"}`},
		{name: "a notification is accepted", body: `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`},
		{name: "an answer to no request is refused", body: `{"jsonrpc":"2.0","id":4294967297,"result":{"action":"accept"}}`},
		{name: "an empty answer is accepted", body: `{"jsonrpc":"2.0","id":4294967297,"result":{}}`},
		{name: "the wrong Content-Type is refused", contentType: "text/plain", body: `{"jsonrpc":"2.0","id":2,"method":"ping"}`},
		{name: "an unknown protocol version is refused", version: "1999-01-01", body: `{"jsonrpc":"2.0","id":2,"method":"ping"}`},
		{name: "a 2026-07-28 _meta under an older header is refused", body: `{"jsonrpc":"2.0","id":2,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`},
		{name: "a 2026-07-28 _meta spelled with escapes is read as mcp-go reads it", body: `{"jsonrpc":"2.0","id":2,"method":"ping","params":{"\u005fmeta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`},
		{name: "a _meta that is not an object is mcp-go's to refuse", body: `{"jsonrpc":"2.0","id":2,"method":"ping","params":{"_meta":7}}`},
	}
	ours, theirs := frontEndpoints(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			contentType, version := tc.contentType, tc.version
			if contentType == "" {
				contentType = json
			}
			if version == "" {
				version = v
			}
			want := frontExchange(t, theirs, contentType, version, tc.body, tc.answer)
			got := frontExchange(t, ours, contentType, version, tc.body, tc.answer)
			if got != want {
				t.Errorf("the listener answered\n%s\nmcp-go's server answers\n%s", got, want)
			}
		})
	}
}

// TestCallThatNotifiesIsAnsweredOnAnEventStream: a notification sent
// while a call is served goes on the call's own stream, before its
// response, framed as mcp-go frames it. (Not compared with mcp-go's
// server: it drops a notification its forwarder has taken when the
// response is ready first, so its answer to this exchange varies.)
func TestCallThatNotifiesIsAnsweredOnAnEventStream(t *testing.T) {
	t.Parallel()
	url, _ := frontListener(t)
	got := frontExchange(t, url, "application/json", "2025-11-25", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"notify"}}`, "")
	want := "200 text/event-stream\n" +
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1,\"progressToken\":\"t\"}}\n\n" +
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"notified\"}]}}\n\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// frontElicit calls the elicit tool on session at url and returns the id
// of the elicitation it is sent, and the text of the call's result once
// the call is answered.
func frontElicit(t *testing.T, url, session string) (string, <-chan string) {
	t.Helper()
	resp := frontPost(t, url, session, "application/json", "2025-11-25", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"elicit"}}`)
	r := bufio.NewReader(resp.Body)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			resp.Body.Close()
			t.Fatalf("the call ended before it elicited: %v", err)
		}
		if m := elicitationID.FindStringSubmatch(line); m != nil {
			result := make(chan string, 1)
			go func() {
				defer resp.Body.Close()
				rest, _ := io.ReadAll(r)
				result <- string(rest)
			}()
			return m[1], result
		}
	}
}

// frontAnswer posts the client's answer to elicitation id on session and
// returns the status it gets.
func frontAnswer(t *testing.T, url, session, id, action string) int {
	t.Helper()
	resp := frontPost(t, url, session, "application/json", "2025-11-25", `{"jsonrpc":"2.0","id":`+id+`,"result":{"action":"`+action+`"}}`)
	resp.Body.Close()
	return resp.StatusCode
}

func TestFrontServesTheSessionsItInitializedUntilTheyEnd(t *testing.T) {
	t.Parallel()
	url, sessions := frontListener(t)
	id := frontSession(t, url)
	if _, ok := sessions.front.registered.Load(id); !ok {
		t.Fatal("the front does not serve the session it initialized")
	}
	sessions.end(t.Context(), id)
	if _, ok := sessions.front.registered.Load(id); ok {
		t.Error("the front still holds a session that ended")
	}
}

func TestElicitationAnswerPostedOnAnotherSessionDoesNotSettleIt(t *testing.T) {
	t.Parallel()
	url, _ := frontListener(t)
	victim, other := frontSession(t, url), frontSession(t, url)
	id, result := frontElicit(t, url, victim)
	if code := frontAnswer(t, url, other, id, "accept"); code == http.StatusAccepted {
		t.Errorf("an answer posted on another session was accepted (%d)", code)
	}
	if code := frontAnswer(t, url, victim, id, "decline"); code != http.StatusAccepted {
		t.Fatalf("the session's own answer: status %d, want 202", code)
	}
	if got := <-result; !strings.Contains(got, `"text":"decline"`) {
		t.Errorf("the call got %s, want the session's own answer (decline)", got)
	}
}

func TestElicitationAnsweredTwiceTakesTheFirstAnswer(t *testing.T) {
	t.Parallel()
	url, _ := frontListener(t)
	session := frontSession(t, url)
	id, result := frontElicit(t, url, session)
	if code := frontAnswer(t, url, session, id, "decline"); code != http.StatusAccepted {
		t.Fatalf("the answer: status %d, want 202", code)
	}
	if got := <-result; !strings.Contains(got, `"text":"decline"`) {
		t.Errorf("the call got %s, want the first answer (decline)", got)
	}
	if code := frontAnswer(t, url, session, id, "accept"); code == http.StatusAccepted {
		t.Errorf("a second answer to one elicitation was accepted (%d)", code)
	}
}

func TestEndedSessionIsNotServedByTheFront(t *testing.T) {
	t.Parallel()
	url, sessions := frontListener(t)
	id := frontSession(t, url)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodDelete, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(server.HeaderKeySessionID, id)
	req.Header.Set(mcp.HeaderProtocolVersion, "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	resp = frontPost(t, url, id, "application/json", "2025-11-25", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo"}}`)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("a call on a deleted session: status %d, want 404", resp.StatusCode)
	}
	if _, ok := sessions.front.registered.Load(id); ok {
		t.Error("the front still holds a deleted session")
	}
}
