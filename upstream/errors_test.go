package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

func TestCutResponseIsTypedResultTooLarge(t *testing.T) {
	t.Parallel()
	call := transport.JSONRPCRequest{Method: string(mcp.MethodToolsCall), ID: mcp.NewRequestId(int64(7))}
	list := transport.JSONRPCRequest{Method: string(mcp.MethodToolsList), ID: mcp.NewRequestId(int64(8))}
	cut := &transport.JSONRPCResponse{Error: &mcp.JSONRPCErrorDetails{Code: tooLargeCode, Message: tooLargeMarker + " (10 bytes); it was discarded"}}
	// An upstream error that merely quotes the marker is the upstream's
	// own: only the limiter's code says a response was cut.
	quoted := &transport.JSONRPCResponse{Error: &mcp.JSONRPCErrorDetails{Code: mcp.INTERNAL_ERROR, Message: tooLargeMarker}}
	tests := []struct {
		name      string
		req       transport.JSONRPCRequest
		raw       bool // the call asked for its result raw, as Pool.Call does
		resp      *transport.JSONRPCResponse
		wantLarge bool
	}{
		{"a cut tools/call response is ErrResultTooLarge", call, true, cut, true},
		{"an upstream error quoting the marker is not", call, true, quoted, false},
		{"a cut response to another request is left to the client", list, true, cut, false},
		{"a cut response to a call that did not ask for its result raw is left to the client", call, false, cut, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			if tt.raw {
				var dst json.RawMessage
				ctx = withRawResult(ctx, &dst)
			}
			resp, err := finishCall(ctx, tt.req, tt.resp, nil)
			if got := errors.Is(err, ErrResultTooLarge); got != tt.wantLarge {
				t.Fatalf("errors.Is(%v, ErrResultTooLarge) = %v, want %v", err, got, tt.wantLarge)
			}
			if !tt.wantLarge && resp != tt.resp {
				t.Errorf("response %v, want the one given passed on", resp)
			}
		})
	}
}

func TestTransportErrorKeepsResultTooLarge(t *testing.T) {
	t.Parallel()
	// mcp-go's client wraps what the transport returns in a
	// *transport.Error; the sentinel must survive it for Call to tell.
	err := transport.NewError(tooLargeResponse(&transport.JSONRPCResponse{Error: &mcp.JSONRPCErrorDetails{Code: tooLargeCode, Message: "cut"}}))
	if !errors.Is(err, ErrResultTooLarge) {
		t.Errorf("errors.Is(%v, ErrResultTooLarge) = false", err)
	}
}

func TestShutdownNoiseIsRecognisedByType(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"a pipe closed already, wrapped", fmt.Errorf("failed to close stdin: %w", &os.PathError{Op: "close", Path: "|1", Err: os.ErrClosed}), true},
		{"an error that only quotes the text", errors.New("upstream said: file already closed"), false},
		{"a cancelled context", context.Canceled, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := isShutdownNoise(tt.err); got != tt.want {
				t.Errorf("isShutdownNoise(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}
