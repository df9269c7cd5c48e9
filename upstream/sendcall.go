package upstream

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// firstCallID is where the ids of the tools/calls sendCall sends start:
// mcp-go's client numbers its own requests from 1 on the same transport,
// and a response must reach the one request that waits for it.
const firstCallID = 1 << 40

// sendCall sends a tools/call of params on the session's transport and
// puts its result in *raw, as it came. It is Client.CallTool without what
// a session of the handshake does not use: on such a session mcp-go's
// client adds nothing to the request (no _meta, no header) and has
// nothing to fulfil in the answer (its multi round trips are
// 2026-07-28's), yet it decodes the result it was handed in place of the
// raw one, and runs each call through a generic round-trip loop — about
// 4 % of a call's CPU in the c16 echo profile. What it does on the way is
// done here: a context already ended sends nothing, a failure is a
// *transport.Error, an error answer is the error it names, and a call
// whose context ends before its answer is cancelled upstream with
// notifications/cancelled (over stdio; the HTTP transports do that
// themselves, see cancelUpstream). Over stdio and streamable HTTP the
// call does not go through mcp-go's transport either (rawStdio.sendDirect,
// session.sendOverHTTP).
func (s *session) sendCall(ctx context.Context, raw *json.RawMessage, params mcp.CallToolParams) error {
	t := s.client.GetTransport()
	req := transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION,
		ID:      mcp.NewRequestId(firstCallID + s.callIDs.Add(1)),
		Method:  string(mcp.MethodToolsCall),
		Params:  params,
	}
	if err := ctx.Err(); err != nil {
		return transport.NewError(err)
	}
	var resp *transport.JSONRPCResponse
	var err error
	switch t := t.(type) {
	case rawStdio:
		resp, err = t.sendDirect(ctx, req, raw)
	case rawStreamableHTTP:
		resp, err = s.sendOverHTTP(ctx, t, req, raw)
	default:
		resp, err = t.SendRequest(withRawResult(ctx, raw), req)
	}
	if err != nil {
		if _, overHTTP := t.(transport.HTTPConnection); !overHTTP {
			cancelUpstream(ctx, t, req)
		}
		return transport.NewError(err)
	}
	if resp.Error != nil {
		return resp.Error.AsError()
	}
	if *raw == nil {
		// Only a result that asks for input is left in the response, and
		// a server of the handshake has no such result to send.
		return fmt.Errorf("the upstream answered a tools/call of the handshake with a result that is not one: %.200s", resp.Result)
	}
	return nil
}

// encodeCall prepares req, a tools/call sent past mcp-go's transport, as
// the transport would (capabilities narrowed, input answers added), and
// returns the JSON text of its id and the message to send.
func encodeCall(ctx context.Context, req *transport.JSONRPCRequest) (key string, msg []byte, err error) {
	narrowCapabilities(ctx, req)
	addInputAnswers(ctx, req)
	if key, err = idText(req.ID); err != nil {
		return "", nil, err
	}
	if msg, err = json.Marshal(*req); err != nil {
		return "", nil, fmt.Errorf("failed to marshal request: %w", err)
	}
	return key, msg, nil
}
