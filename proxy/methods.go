package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
)

// A methodClass says how the proxy treats a client's request method.
type methodClass uint8

const (
	// methodUnknown is the zero class: the proxy does not know how to
	// decide the method, so it is refused before mcp-go handles it.
	methodUnknown methodClass = iota
	// methodLocal is answered by mcpwarden alone; nothing of it reaches an
	// upstream (initialize, ping, the lists, tasks kept by mcp-go).
	methodLocal
	// methodDecided reaches an upstream as mcp:<server>:<method>, decided
	// and audited like a tool call first (request.go, call.go).
	methodDecided
)

// clientMethods classifies every request method mcp-go's server routes.
// A method missing here is refused (see refuseUnknown), so one that a
// newer mcp-go adds cannot reach an upstream before it is classified; a
// test sends every method to check the classes hold.
var clientMethods = map[mcp.MCPMethod]methodClass{
	mcp.MethodInitialize:             methodLocal,
	mcp.MethodPing:                   methodLocal,
	mcp.MethodServerDiscover:         methodLocal,
	mcp.MethodSubscriptionsListen:    methodLocal,
	mcp.MethodResourcesList:          methodLocal,
	mcp.MethodResourcesTemplatesList: methodLocal,
	mcp.MethodPromptsList:            methodLocal,
	mcp.MethodToolsList:              methodLocal,
	mcp.MethodTasksGet:               methodLocal,
	mcp.MethodTasksList:              methodLocal,
	mcp.MethodTasksResult:            methodLocal,
	mcp.MethodTasksCancel:            methodLocal,
	mcp.MethodToolsCall:              methodDecided,
	mcp.MethodResourcesRead:          methodDecided,
	mcp.MethodResourcesSubscribe:     methodDecided,
	mcp.MethodResourcesUnsubscribe:   methodDecided,
	mcp.MethodPromptsGet:             methodDecided,
	mcp.MethodCompletionComplete:     methodDecided,
	// Fanned out to each upstream, decided per server and forwarded only
	// on an allow (setLevel).
	mcp.MethodSetLogLevel: methodDecided,
}

// errUnknownMethod refuses a request method the proxy cannot decide.
var errUnknownMethod = errors.New("mcpwarden does not forward this method")

// gateFields are the fields of a request gateRequest reads.
type gateFields struct {
	Method mcp.MCPMethod `json:"method"`
	Params struct {
		URI  string `json:"uri"`
		Name string `json:"name"` // of a tools/call
	} `json:"params"`
}

// gateRequest runs before mcp-go handles a client's request: it refuses a
// method the proxy does not know how to decide, and decides and forwards
// resources/subscribe and unsubscribe, which mcp-go otherwise only
// acknowledges (a Before hook cannot refuse them). Its error is the
// JSON-RPC error the client gets.
func (s *Server) gateRequest(ctx context.Context, _ any, message any) error {
	raw, ok := message.(json.RawMessage)
	if !ok {
		return fmt.Errorf("%w: the request cannot be read", errUnknownMethod)
	}
	var req gateFields
	if err := json.Unmarshal(raw, &req); err != nil {
		return fmt.Errorf("%w: %v", errUnknownMethod, err)
	}
	// A session is reachable once it has said it is initialized (see
	// server.go): a notification sent to it while mcp-go answers
	// initialize would turn that answer into an event stream without the
	// Mcp-Session-Id header.
	if req.Method != mcp.MethodInitialize {
		s.sessions.heard(ctx, s.principalOf(ctx), s.profileOf(ctx))
	}
	if err := s.awaitStarting(ctx, req.Method, req.Params.Name); err != nil {
		return err
	}
	if req.Method == mcp.MethodSubscriptionsListen {
		return s.listenSubscriptions(ctx, raw) // its resources are subscribed to upstream (listen.go)
	}
	switch clientMethods[req.Method] {
	case methodUnknown:
		return fmt.Errorf("%w: %q", errUnknownMethod, req.Method)
	case methodDecided:
		if req.Method == mcp.MethodToolsCall {
			return s.refuseChanged(ctx, raw, req.Params.Name) // nil unless a changed definition waits (pinning.go)
		}
		if req.Method == mcp.MethodResourcesSubscribe || req.Method == mcp.MethodResourcesUnsubscribe {
			if req.Params.URI == "" {
				return errors.New("uri is required")
			}
			return s.catalog.subscription(ctx, req.Method, req.Params.URI, sessionIDOf(ctx))
		}
	}
	return nil
}

// Offers reports whether a server with caps answers the request kind (one
// of RequestKinds): prompts/get needs the prompts capability, resources/*
// the resources capability, completion/complete completions and
// logging/setLevel logging. Requests an upstream sends to a client are
// always possible.
func Offers(caps mcp.ServerCapabilities, kind string) bool {
	switch mcp.MCPMethod(kind) {
	case mcp.MethodPromptsGet:
		return caps.Prompts != nil
	case mcp.MethodResourcesRead, mcp.MethodResourcesSubscribe:
		return caps.Resources != nil
	case mcp.MethodCompletionComplete:
		return caps.Completions != nil
	case mcp.MethodSetLogLevel:
		return caps.Logging != nil
	}
	return true
}

// RequestKinds returns the methods other than tools/call that mcpwarden
// decides as mcp:<server>:<method>: those a client sends to an upstream,
// those an upstream sends to a client (sampling, elicitation) and a
// sandboxed server's outbound connections (network/connect). A canonical
// name whose tool part has a "/" must name one of them.
func RequestKinds() []string {
	return []string{
		string(mcp.MethodResourcesRead),
		string(mcp.MethodResourcesSubscribe),
		string(mcp.MethodPromptsGet),
		string(mcp.MethodCompletionComplete),
		string(mcp.MethodSetLogLevel),
		string(mcp.MethodSamplingCreateMessage),
		string(mcp.MethodElicitationCreate),
		string(methodConnect),
	}
}
