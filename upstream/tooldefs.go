package upstream

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// Tool definitions are forwarded with their schemas as the upstream wrote
// them. mcp-go's client decodes an inputSchema or outputSchema into a
// struct of five keywords (type, properties, required, $defs,
// additionalProperties), which would drop $schema, allOf/anyOf/oneOf/not,
// if/then/else, and every other keyword of the JSON Schema 2020-12 dialect
// the protocol defaults to: clients would lose constraints the server
// declared, and pinning would hash a schema other than the one the
// upstream serves. So the transports also keep a copy of each tools/list
// page as sent (see listPages), and listTools gives every tool its
// schemas from there as raw JSON.

// listPagesKey is the context key of the *listPages a transport adds the
// raw result of each tools/list response to.
type listPagesKey struct{}

// listPages collects the raw results of the tools/list responses to the
// requests made with its context, one per page.
type listPages struct {
	mu    sync.Mutex
	pages []json.RawMessage
}

// withListPages returns a context whose tools/list results are copied
// into p.
func withListPages(ctx context.Context, p *listPages) context.Context {
	return context.WithValue(ctx, listPagesKey{}, p)
}

// keepListPage copies the result of a successful tools/list response into
// the listPages of ctx, if there is one.
func keepListPage(ctx context.Context, req transport.JSONRPCRequest, resp *transport.JSONRPCResponse) {
	p, _ := ctx.Value(listPagesKey{}).(*listPages)
	if p == nil || resp == nil || resp.Error != nil || req.Method != string(mcp.MethodToolsList) {
		return
	}
	p.mu.Lock()
	p.pages = append(p.pages, resp.Result)
	p.mu.Unlock()
}

// rawSchemas are a tool's schemas as the upstream wrote them; nil for one
// it did not send.
type rawSchemas struct {
	input, output json.RawMessage
}

// schemas returns the raw schemas of every tool the pages list, by name.
// A page that cannot be read adds nothing: its tools keep the schemas the
// client decoded.
func (p *listPages) schemas() map[string]rawSchemas {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]rawSchemas{}
	for _, page := range p.pages {
		var res struct {
			Tools []struct {
				Name         string          `json:"name"`
				InputSchema  json.RawMessage `json:"inputSchema"`
				OutputSchema json.RawMessage `json:"outputSchema"`
			} `json:"tools"`
		}
		if json.Unmarshal(page, &res) != nil {
			continue
		}
		for _, t := range res.Tools {
			out[t.Name] = rawSchemas{input: objectOrNil(t.InputSchema), output: objectOrNil(t.OutputSchema)}
		}
	}
	return out
}

// objectOrNil is raw if it is a JSON object, else nil: a missing, null or
// malformed schema is left to the decoded form.
func objectOrNil(raw json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &m) != nil || m == nil {
		return nil
	}
	return raw
}

// withRawSchemas gives t the schemas in raw as RawInputSchema and
// RawOutputSchema, which mcp.Tool marshals in place of the decoded ones.
// The decoded schemas keep their properties and required list for the
// code that reads them; their type is cleared, as mcp.Tool refuses to
// marshal a schema set both ways.
func withRawSchemas(t mcp.Tool, raw rawSchemas) mcp.Tool {
	if raw.input != nil {
		t.RawInputSchema, t.InputSchema.Type = raw.input, ""
	}
	if raw.output != nil {
		t.RawOutputSchema, t.OutputSchema.Type = raw.output, ""
	}
	return t
}
