package proxy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/proxy/wire"
	"github.com/mcpwarden/mcpwarden/rules"
)

// bigArgs is a tools/call arguments object of at least liftMin bytes with
// the given path, in its canonical form (keys sorted).
func bigArgs(path string) string {
	return fmt.Sprintf(`{"content":%q,"path":%q}`, strings.Repeat("z", wire.LiftMin), path)
}

// liftEnv is a proxy in front of the stand-in upstream with a policy that
// denies writes under /etc.
func liftEnv(t *testing.T) *env {
	t.Helper()
	return newEnv(t, rules.PolicySpec{Deny: []string{"mcp:up:write:path=/etc/**"}, Allow: []string{"mcp:up:*"}}, audit.Config{}, &memorySink{})
}

func TestLiftedArgumentsAreDecidedAndForwardedAsSent(t *testing.T) {
	t.Parallel()
	e := liftEnv(t)
	send := rawSession(t, e.srv)
	resp := send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__write","arguments":` + bigArgs("/etc/passwd") + `}}`)
	if text := mustJSON(t, resp); !strings.Contains(text, "denied") {
		t.Errorf("a large write to /etc got %.300s, want it denied", text)
	}
	resp = send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"up__write","arguments":` + bigArgs("/tmp/ok") + `}}`)
	if text := mustJSON(t, resp); !strings.Contains(text, "written") {
		t.Errorf("a large write to /tmp got %.300s, want it forwarded", text)
	}
	got := e.rec.Arguments()
	if len(got) != 1 || got[0] != bigArgs("/tmp/ok") {
		t.Errorf("the upstream got %d calls, want one with the arguments as sent", len(got))
	}
	if n := e.srv.inflight.InUse(); n != 0 {
		t.Errorf("%d bytes still held after the calls ended", n)
	}
}

func TestLiftingSlipsNoArgumentsPastTheDecision(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, args, want string
	}{
		// Lifting hands the handler the bytes, which jsonargs checks as
		// strictly as ever: a checker reading the first "path" and a
		// server reading the last would disagree.
		{"a duplicate key in lifted arguments is still refused", `{"path":"/tmp/ok","content":"` + strings.Repeat("z", wire.LiftMin) + `","path":"/etc/passwd"}`, "duplicate key"},
		// encoding/json reads "Arguments" as the arguments too, and the
		// last one counts: the write to /etc is what mcp-go hands on.
		{"a second Arguments member is decided as mcp-go reads it", bigArgs("/tmp/ok") + `,"Arguments":{"path":"/etc/passwd"}`, "denied"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := liftEnv(t)
			send := rawSession(t, e.srv)
			resp := send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__write","arguments":` + tt.args + `}}`)
			if text := mustJSON(t, resp); !strings.Contains(text, tt.want) {
				t.Errorf("got %.300s, want a refusal with %q", text, tt.want)
			}
			if n := len(e.rec.Arguments()); n != 0 {
				t.Errorf("the upstream was called %d times", n)
			}
		})
	}
}

func TestForgedLiftPlaceholderIsOrdinaryArguments(t *testing.T) {
	t.Parallel()
	e := liftEnv(t)
	send := rawSession(t, e.srv)
	// A client cannot name lifted arguments: a placeholder whose token is
	// not in its connection's set is an argument object like any other.
	forged := wire.LiftPrefix + strings.Repeat("A", 26) + wire.LiftSuffix
	resp := send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__echo","arguments":` + forged + `}}`)
	if result, _ := resp["result"].(map[string]any); result == nil || result["isError"] == true {
		t.Fatalf("got %v, want the call forwarded", resp)
	}
	if got := e.rec.Arguments(); len(got) != 1 || got[0] != forged {
		t.Errorf("the upstream got %q, want the forged placeholder as the arguments", got)
	}
}

func TestLargeArgumentsOverHTTPAreDecidedAsSent(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, rules.Spec{Global: rules.PolicySpec{Deny: []string{"mcp:fs:echo:text=deny*"}, Allow: []string{"mcp:*:*"}}}, Options{})
	c := e.httpClient(t)
	big := strings.Repeat("y", 2*wire.LiftMin)
	res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "fs__echo", Arguments: map[string]any{"text": "deny" + big}}})
	if err != nil || !res.IsError || !strings.Contains(testkit.Text(res), "denied") {
		t.Errorf("a large denied call over HTTP: %v, %q, want it denied", err, testkit.Text(res))
	}
	res, err = c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "fs__echo", Arguments: map[string]any{"text": big}}})
	if err != nil || res.IsError || testkit.Text(res) != big {
		t.Errorf("a large allowed call over HTTP: %v, %d bytes back, want its text echoed", err, len(testkit.Text(res)))
	}
	if n := e.srv.inflight.InUse(); n != 0 {
		t.Errorf("%d bytes still held after the streamed result was written", n)
	}
}

func TestStdioQueuedLargeCallsAreCounted(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, allowAllServers, Options{})
	send, next := rawStdio(t, e.srv)
	initializeStdio(t, send, next, `{}`)
	drainEntered(t, e.fs)
	// Calls held at once all hold their arguments, so each is counted from
	// when its line is read. (mcp-go's own stdio transport ran 5 at a time
	// and queued the rest, uncounted until a worker got to them.)
	const calls = 12
	args := bigArgs("/tmp/a")
	for i := range calls {
		send(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"fs__hold","arguments":%s}}`, i+1, args)
	}
	deadline := time.Now().Add(10 * time.Second)
	for e.srv.inflight.InUse() < calls*int64(len(args)) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := e.srv.inflight.InUse(); got < calls*int64(len(args)) {
		t.Errorf("%d bytes counted with %d calls of %d bytes read, want all of them", got, calls, len(args))
	}
	close(e.fs.release)
	for range calls {
		resp := next()
		if result, _ := resp["result"].(map[string]any); result == nil || result["isError"] == true {
			t.Errorf("a held call failed: %v", resp)
		}
	}
	if got := e.srv.inflight.InUse(); got != 0 {
		t.Errorf("%d bytes still held after every call ended", got)
	}
}

func TestStdioLargeCallsBeyondTheBoundAreRefusedWhenRead(t *testing.T) {
	t.Parallel()
	args := bigArgs("/tmp/a")
	e := newCatalogEnv(t, allowAllServers, Options{MaxInflightBytes: int64(3*len(args) + len(args)/2)})
	send, next := rawStdio(t, e.srv)
	initializeStdio(t, send, next, `{}`)
	drainEntered(t, e.fs)
	const calls = 6
	for i := range calls {
		send(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"fs__hold","arguments":%s}}`, i+1, args)
	}
	refused := 0
	for range calls - 3 {
		if text := mustJSON(t, next()); strings.Contains(text, "max_inflight_mb exceeded: its arguments") && strings.Contains(text, "nothing was forwarded") {
			refused++
		} else {
			t.Errorf("got %.300s, want a refusal naming max_inflight_mb", text)
		}
	}
	close(e.fs.release)
	for range 3 {
		next()
	}
	if refused != calls-3 {
		t.Errorf("%d calls refused, want %d", refused, calls-3)
	}
	if got := e.srv.inflight.InUse(); got != 0 {
		t.Errorf("%d bytes still held after every call ended", got)
	}
}

// drainEntered takes the hold tool's signals, so that any number of calls
// may be held at once.
func drainEntered(t *testing.T, l *methodLog) {
	go func() {
		for {
			select {
			case <-l.entered:
			case <-t.Context().Done():
				return
			}
		}
	}()
}

func TestLargeResultIsStreamedAsTheUpstreamSentIt(t *testing.T) {
	t.Parallel()
	e := liftEnv(t)
	send, next := rawStdio(t, e.srv)
	initializeStdio(t, send, next, `{}`)
	text := strings.Repeat("r", 2*wire.LiftMin) + `"\u2028<&>`
	args, _ := json.Marshal(map[string]string{"text": text})
	send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__echo","arguments":%s}}`, args)
	result, _ := next()["result"].(map[string]any)
	content, _ := result["content"].([]any)
	if len(content) != 1 || content[0].(map[string]any)["text"] != text {
		t.Errorf("the streamed result's content is not the upstream's text (%d items)", len(content))
	}
	if n := e.srv.inflight.InUse(); n != 0 {
		t.Errorf("%d bytes still held after the result was written", n)
	}
}

func TestUpstreamTextNamingAResultPlaceholderIsLeftAsItIs(t *testing.T) {
	t.Parallel()
	e := liftEnv(t)
	send := rawSession(t, e.srv)
	// An upstream cannot name a result to stream: only a placeholder of the
	// connection's set is replaced, and only where mcp-go wrote it.
	for i, text := range []string{
		strings.TrimPrefix(wire.StreamPrefix, `"`) + strings.Repeat("A", wire.StreamTokenLen),
		wire.StreamPrefix + strings.Repeat("A", wire.StreamTokenLen) + `"`,
		wire.StreamPrefix + "short",
	} {
		args, _ := json.Marshal(map[string]string{"text": text})
		resp := send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"up__echo","arguments":%s}}`, i+1, args))
		result, _ := resp["result"].(map[string]any)
		content, _ := result["content"].([]any)
		if len(content) != 1 || content[0].(map[string]any)["text"] != text {
			t.Errorf("text %q came back as %v", text, content)
		}
	}
}
