package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

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
	if msg, err = marshalCall(req); err != nil {
		return "", nil, fmt.Errorf("failed to marshal request: %w", err)
	}
	return key, msg, nil
}

// marshalCall is json.Marshal(*req), with room for the stdio transport's
// newline after it. The tools/call sendCall builds — an integer
// id, a plain tool name, arguments already in JSON — is written out
// directly: json.Marshal reaches those fields through three MarshalJSON
// methods (the id's, the params', the _meta's) and compacts each
// one's output again, about 4 µs of a call's CPU in the c16 echo profile
// (TestMarshalCallIsJSONMarshal, FuzzMarshalCallIsJSONMarshal). The
// arguments go as they are, where json.Marshal would escape <, > and &
// in their strings: the same JSON value, and the one that was decided.
// Anything else is json.Marshal's.
func marshalCall(req *transport.JSONRPCRequest) ([]byte, error) {
	p, isCall := req.Params.(mcp.CallToolParams)
	id, isInt := req.ID.Value().(int64)
	if !isCall || !isInt || req.JSONRPC != mcp.JSONRPC_VERSION || !plainJSONString(req.Method) ||
		!plainJSONString(p.Name) || p.Arguments != nil || len(p.RawArguments) == 0 ||
		p.Task != nil || len(p.InputResponses) > 0 || p.RequestState != "" || !json.Valid(p.RawArguments) {
		return json.Marshal(*req)
	}
	var meta []byte
	if p.Meta != nil {
		var err error
		if meta, err = json.Marshal(p.Meta); err != nil {
			return nil, err
		}
	}
	b := make([]byte, 0, 128+len(req.Method)+len(p.Name)+len(p.RawArguments)+len(meta))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(append(append(b, `,"method":"`...), req.Method...), `","params":{"name":"`...)
	b = append(append(append(b, p.Name...), `","arguments":`...), p.RawArguments...)
	if meta != nil {
		b = append(append(b, `,"_meta":`...), meta...)
	}
	return append(b, "}}"...), nil
}

// plainJSONString says whether s is written in JSON as it is, between
// quotes, by json.Marshal: printable ASCII without ", \, <, > or &.
func plainJSONString(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}
