package app

import (
	"context"
	"log/slog"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/upstream"
)

// A Listed is one upstream server as it came up: the tools it listed, or
// why it did not start.
type Listed struct {
	Server string
	Tools  []mcp.Tool
	Err    error
	// Sandbox is what confines the server's process, as its launcher
	// reported it ("off" for a stdio server run unconfined, "" for a
	// remote one or one that did not start).
	Sandbox string
	// Protocol is the protocol version mcpwarden speaks with the server
	// (see upstream.Pool.Protocol); "" for one that did not start.
	Protocol string
}

// A Listing is every upstream of a config, started once to see what they
// offer: what `tools`, `validate` and `pin` read. Close stops them.
type Listing struct {
	// Servers are the upstreams by name, sorted.
	Servers []Listed
	// Pool holds their sessions, for requests beyond tools/list (the
	// catalog), until Close.
	Pool *upstream.Pool
}

// ListUpstreams starts every upstream server of st, waits for each to
// start or fail its first attempt, bounded by ctx, and lists their tools.
func ListUpstreams(ctx context.Context, st *Setup, logger *slog.Logger, version string) *Listing {
	var mu sync.Mutex
	sandboxes := map[string]string{}
	pool := upstream.New(st.Specs(nil), &upstream.Options{
		Logger:     logger,
		ClientInfo: mcp.Implementation{Name: "mcpwarden", Version: version},
		OnEvent: func(e upstream.Event) {
			if text := sandboxText(e); text != "" {
				mu.Lock()
				sandboxes[e.Server] = text
				mu.Unlock()
			}
		},
	})
	pool.Start(ctx, listingPeer{policy: st.Policy})
	l := &Listing{Pool: pool}
	mu.Lock()
	defer mu.Unlock()
	for _, name := range pool.Names() {
		tools, err := pool.Tools(name)
		if err != nil {
			tools = nil
		}
		l.Servers = append(l.Servers, Listed{Server: name, Tools: tools, Err: err, Sandbox: sandboxes[name], Protocol: pool.Protocol(name)})
	}
	return l
}

// Failed counts the servers that did not start.
func (l *Listing) Failed() int {
	n := 0
	for _, s := range l.Servers {
		if s.Err != nil {
			n++
		}
	}
	return n
}

// Up returns the tools of each server that started, by server.
func (l *Listing) Up() map[string][]mcp.Tool {
	up := make(map[string][]mcp.Tool, len(l.Servers))
	for _, s := range l.Servers {
		if s.Err == nil {
			up[s.Server] = s.Tools
		}
	}
	return up
}

// Close stops the upstreams.
func (l *Listing) Close() error { return l.Pool.Close() }
