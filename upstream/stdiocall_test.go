package upstream

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestLineLimiterHandsDirectCallsTheirResponses: the responses of the
// calls sent past mcp-go's transport (sendDirect) go to those calls,
// whole, and are not passed on to the transport, whose requests they do
// not answer; an oversize one goes as its replacement; and the end of the
// stream ends the wait of those still waiting.
func TestLineLimiterHandsDirectCallsTheirResponses(t *testing.T) {
	t.Parallel()
	stash := newResultStash()
	seven, _ := stash.await("7")
	nine, _ := stash.await("9")
	eleven, _ := stash.await("11")
	stash.expect("8")
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"seven"}]}}`,
		`{"jsonrpc":"2.0","id":8,"result":{"content":[{"type":"text","text":"eight"}]}}`,
		`{"jsonrpc":"2.0","id":9,"error":{"code":-1,"message":"failed"}}`,
		`{"jsonrpc":"2.0","id":7,"method":"sampling/createMessage","params":{}}`,
		`{"jsonrpc":"2.0","id":11,"result":{"t":"` + strings.Repeat("x", 2000) + `"}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"id":7}}`,
	}, "\n") + "\n"
	lines := readLines(t, newLineLimiter(strings.NewReader(in), 1<<10, false, stash))
	want := []string{
		`{"jsonrpc":"2.0","id":8,"result":{"content":[]}}`,
		`{"jsonrpc":"2.0","id":7,"method":"sampling/createMessage","params":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"id":7}}`,
	}
	if strings.Join(lines, "") != strings.Join(want, "\n")+"\n" {
		t.Errorf("lines passed on:\n%s\nwant:\n%s", strings.Join(lines, ""), strings.Join(want, "\n"))
	}
	for name, c := range map[string]struct {
		ch   <-chan []byte
		want string
	}{
		"7":  {seven, `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"seven"}]}}`},
		"9":  {nine, `{"jsonrpc":"2.0","id":9,"error":{"code":-1,"message":"failed"}}`},
		"11": {eleven, tooLargeMarker},
	} {
		select {
		case got := <-c.ch:
			if !strings.Contains(string(got), c.want) {
				t.Errorf("call %s got %.200s, want %.200s", name, got, c.want)
			}
		default:
			t.Errorf("call %s got no response", name)
		}
	}
	select {
	case <-stash.ended:
	default:
		t.Error("the end of the stream did not end the wait")
	}
	if _, ok := stash.await("12"); ok {
		t.Error("a call registered after the stream ended")
	}
}

// TestConcurrentLargeCallsAndTransportRequestsDoNotInterleave: calls sent
// past mcp-go's transport and the transport's own requests write to the
// same stdin and are answered on the same stdout; many large calls at
// once, with tools/list requests among them, all get their own answers.
func TestConcurrentLargeCallsAndTransportRequestsDoNotInterleave(t *testing.T) {
	t.Parallel()
	p := Start(t.Context(), map[string]Spec{"s": {Transport: TransportStdio, Command: os.Args[0], Env: map[string]string{stdioServerEnv: filepath.Join(t.TempDir(), "pid")}}}, nil)
	t.Cleanup(func() { p.Close() })
	c, _, err := p.Session("s")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 32 {
		wg.Go(func() {
			text := fmt.Sprintf("%d:%s", i, strings.Repeat(string(rune('a'+i%26)), 64<<10))
			raw, err := p.Call(t.Context(), "s", nil, mcp.CallToolParams{Name: "tool0", Arguments: map[string]any{"text": text}})
			switch {
			case err != nil:
				errs <- err
			case !strings.Contains(string(raw), text):
				errs <- fmt.Errorf("call %d got another answer: %.100s", i, raw)
			}
		})
		wg.Go(func() {
			if _, err := c.ListTools(t.Context(), mcp.ListToolsRequest{}); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// FuzzLineLimiterHandsEachResponseOnce: with calls waiting for the
// responses with ids 1 and "a" (sent past mcp-go's transport) and results
// expected for id 2, every whole line of a stream either goes on to the
// transport or to one waiting call, never both and never neither, and
// what a call gets is a line of the stream as it came.
func FuzzLineLimiterHandsEachResponseOnce(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"content":[]}}` + "\n" + `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"x"}]}}` + "\n",
		`{"jsonrpc":"2.0","id":"a","error":{"code":1,"message":"m"}}` + "\n" + `{"id":1,"method":"ping"}` + "\n",
		`{"id":1,"id":3,"result":{}}` + "\n" + `data: {"id":1}` + "\n\n" + `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n",
		`{"ID":1,"result":{}}` + "\n" + `{"id":1.0,"result":{}}` + "\n" + `{"id":"\u0061","result":{}}` + "\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if !strings.HasSuffix(in, "\n") {
			in += "\n"
		}
		stash := newResultStash()
		one, _ := stash.await("1")
		a, _ := stash.await(`"a"`)
		stash.expect("2")
		out := strings.Join(readLines(t, newLineLimiter(strings.NewReader(in), 1<<20, false, stash)), "")
		lines := strings.SplitAfter(in, "\n")
		lines = lines[:len(lines)-1] // after the last newline: nothing
		inputs := map[string]bool{}
		for _, l := range lines {
			inputs[strings.TrimSuffix(l, "\n")] = true
		}
		delivered := 0
		for _, ch := range []<-chan []byte{one, a} {
			select {
			case msg := <-ch:
				delivered++
				if !inputs[string(msg)] {
					t.Errorf("a call got %q, which is not a line of the stream", msg)
				}
			default:
			}
		}
		passed := strings.Count(out, "\n")
		if passed+delivered != len(lines) {
			t.Errorf("%d lines in, %d passed on and %d handed to calls:\nin  %q\nout %q", len(lines), passed, delivered, in, out)
		}
	})
}

// TestDirectResponseFollowsTheNotificationsBeforeIt: a server's progress
// notification and the result after it often come in one read. The
// result of a call sent past mcp-go's transport is handed to the call only
// once the transport's reader has taken, and handled, the notification
// before it, so that the progress reaches mcpwarden's client before the
// result does (its SDK drops progress for a call it has the result of).
func TestDirectResponseFollowsTheNotificationsBeforeIt(t *testing.T) {
	t.Parallel()
	stash := newResultStash()
	answer, _ := stash.await("7")
	progress := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":3}}`
	in := progress + "\n" + `{"jsonrpc":"2.0","id":7,"result":{"content":[]}}` + "\n"
	r := bufio.NewReader(newLineLimiter(strings.NewReader(in), 1<<10, false, stash))
	line, err := r.ReadString('\n')
	if err != nil || line != progress+"\n" {
		t.Fatalf("first line %q, %v; want the notification", line, err)
	}
	select {
	case msg := <-answer:
		t.Fatalf("the call got its result %s before the reader handled the notification before it", msg)
	default:
	}
	if line, err := r.ReadString('\n'); err != io.EOF || line != "" {
		t.Fatalf("then %q, %v; want the end of the stream", line, err)
	}
	select {
	case msg := <-answer:
		if !strings.Contains(string(msg), `"id":7`) {
			t.Errorf("the call got %s", msg)
		}
	default:
		t.Error("the call got no result once the reader had read on")
	}
}

// TestDirectResponsesHeldAtTheEndOfTheStreamAreHandedOver: responses
// held behind a notification when the stream ends go to their calls
// before the end of the stream ends the calls' wait.
func TestDirectResponsesHeldAtTheEndOfTheStreamAreHandedOver(t *testing.T) {
	t.Parallel()
	stash := newResultStash()
	answer, _ := stash.await("7")
	in := `{"jsonrpc":"2.0","method":"notifications/message","params":{}}` + "\n" + `{"jsonrpc":"2.0","id":7,"result":{}}` + "\n"
	l := newLineLimiter(iotest.DataErrReader(strings.NewReader(in)), 1<<10, false, stash)
	if _, err := l.Read(make([]byte, 1<<10)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stash.ended:
	default:
		t.Fatal("the end of the stream did not end the wait")
	}
	select {
	case <-answer:
	default:
		t.Error("a response held behind a notification was lost at the end of the stream")
	}
}
