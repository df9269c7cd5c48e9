package app

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"strconv"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/egress"
	"github.com/mcpwarden/mcpwarden/proxy/connect"
	"github.com/mcpwarden/mcpwarden/rules"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// listingPeer is the peer of a pool started only to list tools (tools,
// validate, pin): it has no client to route requests to, and decides its
// servers' connections by the rules alone, so that an npx or uvx server
// reaches the registry a rule allows on its first start. What the rules
// would ask about is refused: no one is there to ask.
type listingPeer struct {
	policy *rules.Policy
}

var (
	_ upstream.Peer         = listingPeer{}
	_ upstream.EgressPolicy = listingPeer{}
)

func (listingPeer) Notify(context.Context, string, mcp.JSONRPCNotification) {}

func (listingPeer) CreateMessage(context.Context, string, mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return nil, upstream.ErrNoPeer
}

func (listingPeer) Elicit(context.Context, string, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return nil, upstream.ErrNoPeer
}

func (listingPeer) ListRoots(context.Context, string, mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	return nil, upstream.ErrNoPeer
}

// DecideConnect allows a connection the rules allow and refuses the rest.
func (l listingPeer) DecideConnect(_ context.Context, server string, _ *upstream.Route, r egress.Request) egress.Verdict {
	args, err := connect.Args(map[string]any{"host": r.Host, "port": json.Number(strconv.Itoa(int(r.Port)))})
	if err != nil {
		return egress.Verdict{Reason: err.Error()}
	}
	v := l.policy.Decide(rules.Call{Server: server, Tool: rules.ToolConnect, Arguments: args})
	if v.Decision == rules.Allow {
		return egress.Verdict{Decision: egress.Allow, Reason: v.Reason}
	}
	return egress.Verdict{Reason: fmt.Sprintf("%s (%s); listing tools asks no one, so only what the rules allow goes out", v.Decision, v.Reason)}
}

// ReportConnect records nothing: listing writes no audit log.
func (listingPeer) ReportConnect(string, *upstream.Route, egress.Report) {}

// NamesAddress is the proxy's: a special address only when a rule names it.
func (l listingPeer) NamesAddress(server, _ string, addr netip.Addr, port uint16) bool {
	return connect.NamesAddress(l.policy, server, addr, port)
}
