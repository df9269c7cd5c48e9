// Package upstream connects to the MCP servers mcpwarden sits in front of,
// keeps their sessions open, lists their tools and forwards calls to them.
package upstream

import "time"

// A Spec says how to reach one upstream server: a command run over stdio,
// or a URL reached over streamable HTTP or legacy SSE.
type Spec struct {
	// Transport is TransportStdio, TransportHTTP or TransportSSE.
	Transport Transport
	// Command, Args, Env and Dir start a stdio server. Env is added to
	// mcpwarden's own environment; Dir "" is the current directory.
	Command string
	Args    []string
	Env     map[string]string
	Dir     string
	// URL and Headers reach a remote server.
	URL     string
	Headers map[string]string
	// InitTimeout bounds starting, initializing and listing tools; 0 means
	// DefaultInitTimeout.
	InitTimeout time.Duration
}

// A Transport is how an upstream server is reached.
type Transport uint8

// Transports. The zero value is stdio.
const (
	TransportStdio Transport = iota
	TransportHTTP
	TransportSSE
)

func (t Transport) String() string {
	switch t {
	case TransportStdio:
		return "stdio"
	case TransportHTTP:
		return "http"
	case TransportSSE:
		return "sse"
	default:
		return "unknown"
	}
}

// DefaultInitTimeout bounds an upstream's start when its Spec sets none.
const DefaultInitTimeout = 30 * time.Second
