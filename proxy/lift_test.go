package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/rules"
)

// bigArgs is a tools/call arguments object of at least liftMin bytes with
// the given path, in its canonical form (keys sorted).
func bigArgs(path string) string {
	return fmt.Sprintf(`{"content":%q,"path":%q}`, strings.Repeat("z", liftMin), path)
}

func TestLiftSpan(t *testing.T) {
	t.Parallel()
	args := bigArgs("/tmp/a")
	tests := []struct {
		name string
		msg  string
		want bool
	}{
		{"a tools/call with large arguments is lifted", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__write","arguments":` + args + `}}`, true},
		{"members in another order are found", `{"params":{"arguments":` + args + `,"name":"up__write"},"id":"x","method":"tools/call","jsonrpc":"2.0"}`, true},
		{"small arguments are left in place", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__write","arguments":{"path":"/tmp/a"}}}`, false},
		{"another method is left alone", `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"p","arguments":` + args + `}}`, false},
		{"arguments that are not an object are left alone", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__write","arguments":["` + strings.Repeat("z", liftMin) + `"]}}`, false},
		{"a second method member read as one by encoding/json is not lifted", `{"jsonrpc":"2.0","id":1,"method":"tools/call","Method":"tools/list","params":{"name":"up__write","arguments":` + args + `}}`, false},
		{"a second params member is not lifted", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__write","arguments":` + args + `},"PARAMS":{"name":"up__echo"}}`, false},
		{"a second arguments member is not lifted", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__write","arguments":` + args + `,"Arguments":{"path":"/etc/passwd"}}}`, false},
		{"a duplicate arguments member is not lifted", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__write","arguments":` + args + `,"arguments":{"path":"/etc/passwd"}}}`, false},
		{"a non-ASCII member name (a Kelvin sign) is not lifted", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__write","arguments":` + args + `,"tas\u212a":{}}}`, false},
		{"an escaped member name is read as encoding/json reads it", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__write","\u0061rguments":` + args + `}}`, true},
		{"a batch is left alone", `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__write","arguments":` + args + `}}]`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			msg := []byte(tt.msg)
			start, end, name, ok := liftSpan(msg)
			if ok != tt.want {
				t.Fatalf("lifted = %v, want %v", ok, tt.want)
			}
			if ok && (string(msg[start:end]) != args || name != "up__write") {
				t.Errorf("lifted %q of %q, want the arguments of up__write", msg[start:end][:20], name)
			}
		})
	}
}

// FuzzLiftKeepsTheMessage checks that lifting changes nothing but the
// arguments: encoding/json (as mcp-go decodes a message) reads the
// placeholder exactly where it read the arguments, and the same method,
// tool name and id.
func FuzzLiftKeepsTheMessage(f *testing.F) {
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__write","arguments":{"path":"/tmp/a"}}}`)
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__write","\u0061rguments":{"path":"/tmp/a"},"_meta":{"arguments":{}}}}`)
	f.Add(`{"method":"tools/call","params":{"arguments":{"p":"/tmp/a"},"name":"x","Name":"y"}}`)
	type message struct {
		ID     json.RawMessage
		Method string
		Params struct {
			Name      string
			Arguments json.RawMessage
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		msg := []byte(s)
		if len(msg) < liftMin {
			msg = bytes.Replace(msg, []byte(`"/tmp/a"`), []byte(fmt.Sprintf("%q", strings.Repeat("z", liftMin))), 1)
		}
		start, end, name, ok := liftSpan(msg)
		if !ok {
			return
		}
		var before message
		if json.Unmarshal(msg, &before) != nil {
			return // mcp-go refuses it as it is, and refuses it lifted
		}
		placeholder := []byte(liftPrefix + "TOKEN" + liftSuffix)
		var after message
		if err := json.Unmarshal(lift(msg, start, end, placeholder), &after); err != nil {
			t.Fatalf("the lifted message does not decode: %v", err)
		}
		if !bytes.Equal(before.Params.Arguments, msg[start:end]) {
			t.Errorf("lifted %q, but encoding/json reads the arguments as %q", msg[start:end], before.Params.Arguments)
		}
		if !bytes.Equal(after.Params.Arguments, placeholder) {
			t.Errorf("encoding/json reads the lifted message's arguments as %q, not the placeholder", after.Params.Arguments)
		}
		if after.Method != before.Method || after.Params.Name != before.Params.Name || name != before.Params.Name || !bytes.Equal(after.ID, before.ID) {
			t.Errorf("lifting changed the message: %+v, then %+v (name %q)", before, after, name)
		}
	})
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
	if n := e.srv.inflight.inUse(); n != 0 {
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
		{"a duplicate key in lifted arguments is still refused", `{"path":"/tmp/ok","content":"` + strings.Repeat("z", liftMin) + `","path":"/etc/passwd"}`, "duplicate key"},
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
	forged := liftPrefix + strings.Repeat("A", 26) + liftSuffix
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
	big := strings.Repeat("y", 2*liftMin)
	res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "fs__echo", Arguments: map[string]any{"text": "deny" + big}}})
	if err != nil || !res.IsError || !strings.Contains(testkit.Text(res), "denied") {
		t.Errorf("a large denied call over HTTP: %v, %q, want it denied", err, testkit.Text(res))
	}
	res, err = c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "fs__echo", Arguments: map[string]any{"text": big}}})
	if err != nil || res.IsError || testkit.Text(res) != big {
		t.Errorf("a large allowed call over HTTP: %v, %d bytes back, want its text echoed", err, len(testkit.Text(res)))
	}
	if n := e.srv.inflight.inUse(); n != 0 {
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
	for e.srv.inflight.inUse() < calls*int64(len(args)) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := e.srv.inflight.inUse(); got < calls*int64(len(args)) {
		t.Errorf("%d bytes counted with %d calls of %d bytes read, want all of them", got, calls, len(args))
	}
	close(e.fs.release)
	for range calls {
		resp := next()
		if result, _ := resp["result"].(map[string]any); result == nil || result["isError"] == true {
			t.Errorf("a held call failed: %v", resp)
		}
	}
	if got := e.srv.inflight.inUse(); got != 0 {
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
	if got := e.srv.inflight.inUse(); got != 0 {
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
	text := strings.Repeat("r", 2*liftMin) + `"\u2028<&>`
	args, _ := json.Marshal(map[string]string{"text": text})
	send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__echo","arguments":%s}}`, args)
	result, _ := next()["result"].(map[string]any)
	content, _ := result["content"].([]any)
	if len(content) != 1 || content[0].(map[string]any)["text"] != text {
		t.Errorf("the streamed result's content is not the upstream's text (%d items)", len(content))
	}
	if n := e.srv.inflight.inUse(); n != 0 {
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
		strings.TrimPrefix(streamPrefix, `"`) + strings.Repeat("A", streamTokenLen),
		streamPrefix + strings.Repeat("A", streamTokenLen) + `"`,
		streamPrefix + "short",
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

// FuzzStreamWriterReplacesOnlyItsPlaceholders checks that the writer of a
// connection passes every message through unchanged except for the
// placeholders of its own set, each replaced by its items once.
func FuzzStreamWriterReplacesOnlyItsPlaceholders(f *testing.F) {
	f.Add(`{"jsonrpc":"2.0","id":1,"result":{"content":[PLACEHOLDER]}}`, `{"type":"text","text":"hi"}`)
	f.Add(`{"text":"mcpwarden.result:AAAAAAAAAAAAAAAAAAAAAAAAAA","x":[PLACEHOLDER]}`, `1`)
	f.Add(`"mcpwarden.result:`+`"mcpwarden.result:PLACEHOLDER`, ``)
	f.Fuzz(func(t *testing.T, msg, item string) {
		set := &streamSet{}
		token := set.put(&streamedResult{items: [][]byte{[]byte(item), []byte(item)}})
		placeholder := streamPrefix + token + `"`
		in := strings.ReplaceAll(msg, "PLACEHOLDER", placeholder)
		var out bytes.Buffer
		if _, err := (streamWriter{w: &out, set: set}).Write([]byte(in)); err != nil {
			t.Fatal(err)
		}
		want := strings.Replace(in, placeholder, item+","+item, 1)
		if out.String() != want {
			t.Errorf("wrote %q for %q, want %q", out.String(), in, want)
		}
	})
}
