package stdio

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/proxy/wire"
)

// progressCalls serves each tools/call by sending the client steps
// progress notifications, then answering.
type progressCalls struct {
	srv   *server.MCPServer
	steps int
}

func (p progressCalls) ServeCall(ctx context.Context, id json.RawMessage, _ []byte) (mcp.JSONRPCMessage, bool) {
	for i := range p.steps {
		_ = p.srv.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), map[string]any{"progressToken": string(id), "progress": i})
	}
	return mcp.NewJSONRPCResultResponse(mcp.NewRequestId(id), mcp.NewToolResultText("done")), true
}

// TestProgressSentBeforeAResultIsWrittenBeforeIt: the progress a call
// sends the client before its result is written before the result, as
// the client's SDK drops progress for a call it has the result of. The
// notifications and the responses used to be written by goroutines of
// their own, so the last progress could follow the result.
func TestProgressSentBeforeAResultIsWrittenBeforeIt(t *testing.T) {
	t.Parallel()
	const calls, steps = 30, 10
	srv := server.NewMCPServer("s", "1")
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, srv, progressCalls{srv, steps}, wire.NewBudget(1<<20), slog.New(slog.DiscardHandler), inR, outW)
	}()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		outR.Close()
		<-done
	})
	lines := bufio.NewScanner(outR)
	// mcp-go sends notifications only to an initialized session.
	if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n"+
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	if !lines.Scan() {
		t.Fatal("no answer to initialize")
	}
	for call := range calls {
		if _, err := fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"t"}}`+"\n", call); err != nil {
			t.Fatal(err)
		}
		progress := 0
		for lines.Scan() {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
				t.Fatalf("unparsable line %q", lines.Text())
			}
			if m.Method == string(mcp.MethodNotificationProgress) {
				progress++
				continue
			}
			if string(m.ID) != fmt.Sprint(call) {
				t.Fatalf("call %d: got %s", call, lines.Text())
			}
			break
		}
		if progress != steps {
			t.Fatalf("call %d: %d progress notifications came before its result, want %d", call, progress, steps)
		}
	}
}
