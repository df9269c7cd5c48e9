package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/pin"
	"github.com/mcpwarden/mcpwarden/proxy/naming"
	"github.com/mcpwarden/mcpwarden/rules"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// toolList is a stand-in upstream that only lists tools.
type toolList map[string][]mcp.Tool

func (l toolList) Names() []string                         { return slices.Sorted(maps.Keys(l)) }
func (l toolList) Tools(server string) ([]mcp.Tool, error) { return l[server], nil }
func (l toolList) Session(string) (*client.Client, mcp.ServerCapabilities, error) {
	return nil, mcp.ServerCapabilities{}, errors.New("no session")
}
func (l toolList) Request(context.Context, string, *upstream.Route, func(context.Context, *client.Client, mcp.ServerCapabilities) (any, error)) (any, error) {
	return nil, errors.New("no session")
}
func (l toolList) EndSession(string)                    {}
func (l toolList) RootsChanged(context.Context, string) {}
func (l toolList) Protocol(string) string               { return "" }
func (l toolList) Call(context.Context, string, *upstream.Route, mcp.CallToolParams) (json.RawMessage, error) {
	return nil, errors.New("not forwarded")
}

func TestUnpinnedAnnotationsAreNoFacts(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	readOnly := mcp.NewTool("read", mcp.WithToolAnnotation(mcp.ToolAnnotation{ReadOnlyHint: &yes, OpenWorldHint: &no}))
	lock, err := pin.Load(filepath.Join(t.TempDir(), "mcpwarden.lock"))
	if err != nil {
		t.Fatal(err)
	}
	if err := lock.Update("fs", []mcp.Tool{readOnly, mcp.NewTool("plain")}); err != nil {
		t.Fatal(err)
	}
	// The upstream now claims "plain" is read-only too: a change nobody
	// accepted, whose claim must not count.
	claimed := mcp.NewTool("plain", mcp.WithToolAnnotation(mcp.ToolAnnotation{ReadOnlyHint: &yes}))
	upstream := toolList{
		"fs":  {readOnly, claimed, mcp.NewTool("added", mcp.WithToolAnnotation(mcp.ToolAnnotation{ReadOnlyHint: &yes}))},
		"web": {readOnly},
	}
	s := &Server{review: review{base: &base{upstream: upstream}, pinning: &Pinning{Lock: lock}}}
	tests := []struct {
		name string
		tool naming.Tool
		want rules.Facts
	}{
		{"a pinned tool's annotations are facts", naming.Tool{Server: "fs", Name: "read"}, rules.Facts{ReadOnly: rules.HintTrue, Destructive: rules.HintTrue, Idempotent: rules.HintFalse, OpenWorld: rules.HintFalse}},
		{"a changed tool's claim is no fact", naming.Tool{Server: "fs", Name: "plain"}, rules.Facts{}},
		{"a tool added since pinning has no facts", naming.Tool{Server: "fs", Name: "added"}, rules.Facts{}},
		{"a server never pinned has no facts", naming.Tool{Server: "web", Name: "read"}, rules.Facts{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := s.review.facts(tt.tool); got != tt.want {
				t.Errorf("toolFacts(%s) = %+v, want %+v", tt.tool.Name, got, tt.want)
			}
		})
	}
	if got := (&review{base: &base{upstream: upstream}}).facts(naming.Tool{Server: "fs", Name: "read"}); got != (rules.Facts{}) {
		t.Errorf("toolFacts without pinning = %+v, want none", got)
	}
}
