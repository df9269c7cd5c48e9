package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpwarden/mcpwarden/proxy/wire"
)

// directCalls serve the tools/calls of clients of the handshake without
// mcp-go's HandleMessage (wire.CallServer): mcp-go decodes such a request
// five times (its head, the hook's view, the protocol's era, the trace
// context, then the typed request, whose arguments fill a map mcpwarden
// never reads) before the handler runs, which cost about a tenth of the
// CPU of a call. Here the message is decoded once, the request hook's
// checks that apply to a listed tool are made, and the tool's handler —
// the same one mcp-go calls — runs with the arguments as sent. Anything
// else is left to HandleMessage: a 2026-07-28 request (mcp-go checks its
// headers and decorates its result), a task, a tool not listed (its
// refusal is audited there), a message that does not decode.
type directCalls struct{ s *Server }

var _ wire.CallServer = directCalls{}

// directRequest is what directCalls read of a tools/call.
type directRequest struct {
	JSONRPC string `json:"jsonrpc"`
	Params  struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Meta      *mcp.Meta       `json:"_meta"`
		// Present only on requests left to HandleMessage.
		Task           json.RawMessage `json:"task"`
		RequestState   json.RawMessage `json:"requestState"`
		InputResponses json.RawMessage `json:"inputResponses"`
	} `json:"params"`
}

// ServeCall serves msg, a tools/call with id, when it is one of the
// handshake's for a tool the client's profile lists.
func (d directCalls) ServeCall(ctx context.Context, id json.RawMessage, msg []byte) (mcp.JSONRPCMessage, bool) {
	s := d.s
	var m directRequest
	if !decodeDirect(msg, &m) || m.JSONRPC != mcp.JSONRPC_VERSION ||
		mcp.IsModernProtocol(m.Params.Meta.ProtocolVersion()) ||
		m.Params.Task != nil || m.Params.RequestState != nil || m.Params.InputResponses != nil {
		return nil, false
	}
	name, profile := m.Params.Name, s.profileOf(ctx)
	tool := s.mcp.GetTool(name)
	if tool == nil || tool.Handler == nil || !s.tools.shown(s.current(), profile, name) ||
		tool.Tool.Execution != nil && tool.Tool.Execution.TaskSupport == mcp.TaskSupportRequired {
		return nil, false
	}
	// What gateRequest does for a tools/call of a listed tool: the session
	// is reachable from now on, and no changed definition waits for it
	// (shown said so; refuseChanged is not needed).
	s.sessions.heard(ctx, s.principalOf(ctx), profile)

	req := mcp.CallToolRequest{Request: mcp.Request{Method: string(mcp.MethodToolsCall)}}
	req.Params.Name, req.Params.Meta = name, m.Params.Meta
	if len(m.Params.Arguments) > 0 {
		req.Params.RawArguments = m.Params.Arguments
	}
	start := time.Now()
	res, err := d.run(ctx, tool.Handler, req)
	resp := d.response(id, name, res, err)
	d.log(ctx, name, start, res, err, resp)
	return resp, true
}

// run calls the handler, turning a panic into an error as mcp-go's
// WithRecovery does.
func (directCalls) run(ctx context.Context, h server.ToolHandlerFunc, req mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, fmt.Errorf("panic recovered in %s tool handler: %v", req.Params.Name, r)
		}
	}()
	return h(ctx, req)
}

// response is the JSON-RPC response to the call, in mcp-go's words when
// the handler failed.
func (directCalls) response(id json.RawMessage, name string, res *mcp.CallToolResult, err error) mcp.JSONRPCMessage {
	rid := mcp.NewRequestId(id)
	switch {
	case err != nil:
		return mcp.NewJSONRPCError(rid, mcp.INTERNAL_ERROR, err.Error(), nil)
	case res == nil:
		return mcp.NewJSONRPCError(rid, mcp.INTERNAL_ERROR, fmt.Sprintf("tool '%s' handler returned no result", name), nil)
	case res.NeedsInput():
		// Only a 2026-07-28 client is asked for input by a result, and its
		// calls are HandleMessage's: the handler does not return one here.
		return mcp.NewJSONRPCError(rid, mcp.INTERNAL_ERROR, fmt.Sprintf("mcpwarden: the call to %s asked a client of the handshake for input by its result", name), nil)
	}
	if msg, ok := wire.ResultResponse(id, res); ok {
		return msg
	}
	return mcp.NewJSONRPCResultResponse(rid, res)
}

// log writes the lines mcp-go's request logger writes for a tool call
// (mcp.tool, then mcp.request), so that the human log reads the same
// whichever path served it; mcp.request lacks mcp.protocol.version, which
// mcp-go reads from the HTTP headers it keeps in a context key of its own.
func (d directCalls) log(ctx context.Context, name string, start time.Time, res *mcp.CallToolResult, err error, resp mcp.JSONRPCMessage) {
	logger := d.s.logger
	if !logger.Enabled(ctx, slog.LevelInfo) {
		return
	}
	took := slog.Float64("duration_s", time.Since(start).Seconds())
	switch {
	case err != nil:
		logger.LogAttrs(ctx, slog.LevelInfo, "mcp.tool", slog.String("mcp.tool.name", name), took, slog.String("outcome", "error"), slog.String("error", err.Error()))
	case res != nil && res.IsError:
		logger.LogAttrs(ctx, slog.LevelInfo, "mcp.tool", slog.String("mcp.tool.name", name), took, slog.String("outcome", "error_result"))
	default:
		logger.LogAttrs(ctx, slog.LevelInfo, "mcp.tool", slog.String("mcp.tool.name", name), took, slog.String("outcome", "ok"))
	}
	attrs := []slog.Attr{slog.String("mcp.method", string(mcp.MethodToolsCall))}
	if cs := server.ClientSessionFromContext(ctx); cs != nil && cs.SessionID() != "" {
		attrs = append(attrs, slog.String("mcp.session.id", cs.SessionID()))
	}
	attrs = append(attrs, took)
	if e, ok := resp.(mcp.JSONRPCError); ok {
		attrs = append(attrs, slog.String("outcome", "error"), slog.String("error", e.Error.Message))
	} else {
		attrs = append(attrs, slog.String("outcome", "ok"))
	}
	logger.LogAttrs(ctx, slog.LevelInfo, "mcp.request", attrs...)
}
