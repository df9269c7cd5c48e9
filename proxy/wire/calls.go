package wire

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
)

// A CallServer serves the tools/call requests a transport reads without
// mcp-go's HandleMessage, which decodes each one five times before its
// handler runs. The transport gives it the request's id and message, with
// a context that carries the client's session and that the transport
// cancels when the client cancels the request (notifications/cancelled):
// mcp-go's own cancellation reaches only the requests it handles.
//
// ServeCall returns the response, or ok false when the request is not one
// it serves (another era's, a task, a tool it does not list): the
// transport then hands the message to HandleMessage, which answers it as
// before. Nothing has happened when ok is false.
type CallServer interface {
	ServeCall(ctx context.Context, id json.RawMessage, msg []byte) (resp mcp.JSONRPCMessage, ok bool)
}
