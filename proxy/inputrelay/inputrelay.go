// Package inputrelay carries an upstream's multi round-trip input requests
// (protocol 2026-07-28) to a client of 2026-07-28 and the client's answers
// back: it reads an upstream's input_required result (Parse), keeps what
// the client's retry must match and carry on under a request state of
// mcpwarden's own (Keeper), builds the result the client is sent
// (Result), and the answers the upstream is sent on the retry (Answers).
// Deciding each request is the proxy's job; this package knows no policy.
package inputrelay

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// A Request is one of an upstream's input requests, its params as the
// upstream sent them.
type Request struct {
	ID     string // the upstream's key for it
	Method mcp.MCPMethod
	Params json.RawMessage // nil when it has none (roots/list)
}

// A Round is an upstream's multi round-trip result: the requests it needs
// answered, sorted by id, and its request state, which goes back to it
// verbatim.
type Round struct {
	Requests     []Request
	RequestState string
}

// Parse reads raw, a tools/call result whose resultType is input_required.
func Parse(raw []byte) (Round, error) {
	var r struct {
		InputRequests map[string]struct {
			Method mcp.MCPMethod   `json:"method"`
			Params json.RawMessage `json:"params"`
		} `json:"inputRequests"`
		RequestState string `json:"requestState"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return Round{}, fmt.Errorf("reading the upstream's multi round-trip result: %w", err)
	}
	round := Round{RequestState: r.RequestState}
	for _, id := range slices.Sorted(maps.Keys(r.InputRequests)) {
		q := r.InputRequests[id]
		switch q.Method {
		case mcp.MethodElicitationCreate, mcp.MethodSamplingCreateMessage:
			if !isObject(q.Params) {
				return Round{}, fmt.Errorf("the upstream's input request %q (%s) has no params object", id, q.Method)
			}
		case mcp.MethodListRoots:
			q.Params = nil
		default:
			return Round{}, fmt.Errorf("the upstream's input request %q has method %q; only elicitation/create, sampling/createMessage and roots/list can be asked", id, q.Method)
		}
		round.Requests = append(round.Requests, Request{ID: id, Method: q.Method, Params: q.Params})
	}
	return round, nil
}

func isObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && m != nil
}

// clientIDPrefix starts the key an upstream's input request is sent to the
// client under: mcpwarden's own input requests (its approval form, the
// client's roots) have keys of their own, which no upstream's can take.
const clientIDPrefix = "upstream:"

// ClientID is the key the client is sent the upstream's input request id
// under.
func ClientID(id string) string { return clientIDPrefix + id }

// WithMessagePrefix returns an elicitation's params with prefix put before
// its message, every other member as the upstream sent it.
func WithMessagePrefix(params json.RawMessage, prefix string) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(params, &m); err != nil {
		return nil, fmt.Errorf("reading the elicitation's params: %w", err)
	}
	var msg string
	if raw, ok := m["message"]; ok {
		if err := json.Unmarshal(raw, &msg); err != nil {
			return nil, fmt.Errorf("the elicitation's message is not a string: %w", err)
		}
	}
	m["message"], _ = json.Marshal(prefix + msg)
	return json.Marshal(m)
}

// Result is the input_required result a client is sent for the requests
// relayed to it, keyed by ClientID, under mcpwarden's request state.
func Result(requests []Request, state string) (*mcp.CallToolResult, error) {
	inputs := make(map[string]json.RawMessage, len(requests))
	for _, q := range requests {
		b, err := json.Marshal(struct {
			Method mcp.MCPMethod   `json:"method"`
			Params json.RawMessage `json:"params,omitempty"`
		}{q.Method, q.Params})
		if err != nil {
			return nil, err
		}
		inputs[ClientID(q.ID)] = b
	}
	var res mcp.CallToolResult
	raw, err := json.Marshal(map[string]any{"resultType": mcp.ResultTypeInputRequired, "inputRequests": inputs, "requestState": state, "content": []any{}})
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("building the multi round-trip result: %w", err)
	}
	return &res, nil
}

// ErrUnanswered is an error of Answers: the client's retry leaves a
// relayed request unanswered.
var ErrUnanswered = errors.New("the retry does not answer every input request it was sent")

// Answers are the answers the upstream is sent on the client's retry:
// mcpwarden's own (p.Answered) and the client's to what was relayed to it
// (p.Relayed), by the upstream's ids. Each of the client's answers goes on
// as the client wrote it; one missing is ErrUnanswered.
func Answers(p *Pending, responses mcp.InputResponses) (map[string]json.RawMessage, error) {
	out := maps.Clone(p.Answered)
	if out == nil {
		out = map[string]json.RawMessage{}
	}
	for _, id := range p.Relayed {
		r, ok := responses[ClientID(id)]
		if !ok {
			return nil, fmt.Errorf("%w: %q has no answer", ErrUnanswered, ClientID(id))
		}
		b, err := json.Marshal(r)
		if err != nil || !isObject(b) {
			return nil, fmt.Errorf("the answer to %q is not a JSON object", ClientID(id))
		}
		out[id] = b
	}
	return out, nil
}

// statePrefix starts every request state Keeper issues, so that a retry
// carrying one is told from one answering mcpwarden's own ask.
const statePrefix = "relay."

// IsState reports whether a retry's request state is one Keeper issued
// (or pretends to be: Take says whether it is pending).
func IsState(s string) bool { return strings.HasPrefix(s, statePrefix) }
