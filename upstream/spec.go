// Package upstream connects to the MCP servers mcpwarden sits in front of,
// keeps their sessions open, lists their tools and forwards calls to them.
package upstream

import (
	"context"
	"io"
	"net"
	"time"
)

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
	// DirOrigin is where Dir was set, as the error of a Dir that is no
	// directory names it ("config FILE:LINE:COL: servers.NAME.cwd"); ""
	// when Dir is not the config's.
	DirOrigin string
	// URL and Headers reach a remote server.
	URL     string
	Headers map[string]string
	// HeaderFunc, when set, adds headers to every HTTP request to a remote
	// server, computed from the request's context (the W3C trace context
	// of the call, say). They are set after Headers, so a name both give
	// gets HeaderFunc's value. It must be safe for concurrent use.
	HeaderFunc func(context.Context) map[string]string
	// OAuth, when set, makes mcpwarden an OAuth client of a streamable
	// HTTP server: requests carry the token OAuth.Tokens holds, refreshed
	// before it expires.
	OAuth *OAuth
	// InitTimeout bounds starting, initializing and listing tools (at each
	// start and restart, and each re-listing); 0 means DefaultInitTimeout.
	InitTimeout time.Duration
	// CallTimeout bounds one tools/call, including the time it waits for a
	// free slot; 0 means DefaultCallTimeout. When it expires the upstream is
	// sent notifications/cancelled for the request.
	CallTimeout time.Duration
	// MaxResultBytes caps the size of one JSON-RPC message from the
	// upstream (a tools/call result is one); a larger message is discarded
	// while it is read and the call fails with ErrResultTooLarge. 0 means
	// DefaultMaxResultBytes.
	MaxResultBytes int64
	// MaxConcurrentCalls is how many calls may be in flight to the upstream
	// at once; 0 means DefaultMaxConcurrentCalls. MaxQueuedCalls is how many
	// more may wait for a slot before Call fails fast with ErrBusy; 0 means
	// DefaultMaxQueuedCalls, a negative value means no queue.
	MaxConcurrentCalls int
	MaxQueuedCalls     int
	// Isolation, for a stdio server, gives each principal or each session
	// a child process of its own (see Route); IsolationShared, the zero
	// value, has every caller share one. IsolationIdleTimeout is how long
	// an isolated child may go unused before it is stopped (0 means
	// DefaultIsolationIdleTimeout), IsolationMax how many may run at once
	// (0 means DefaultIsolationMax).
	Isolation            Isolation
	IsolationIdleTimeout time.Duration
	IsolationMax         int
	// NoSampling leaves sampling out of the capabilities mcpwarden declares
	// to the server (servers.<name>.policy.sampling: deny): every
	// sampling request of its would be refused, so none is offered.
	NoSampling bool
	// Sandbox, for a stdio server, starts it (and each isolated child)
	// confined by the kernel through mcpwarden's launcher; nil starts it
	// unconfined.
	Sandbox *Sandbox

	// egress serves the egress proxy of a sandboxed process with
	// network: proxy on its listener (see server.serveEgress); set by
	// dialSpec, nil in a Spec given to the pool.
	egress func(net.Listener) io.Closer
}

// Defaults for the zero values of a Spec's limits.
const (
	DefaultCallTimeout        = 120 * time.Second
	DefaultMaxResultBytes     = 32 << 20
	DefaultMaxConcurrentCalls = 16
	DefaultMaxQueuedCalls     = 64

	DefaultIsolationIdleTimeout = 10 * time.Minute
	DefaultIsolationMax         = 16
)

func (s Spec) initTimeout() time.Duration { return orDefault(s.InitTimeout, DefaultInitTimeout) }
func (s Spec) callTimeout() time.Duration { return orDefault(s.CallTimeout, DefaultCallTimeout) }
func (s Spec) maxResultBytes() int64      { return orDefault(s.MaxResultBytes, DefaultMaxResultBytes) }
func (s Spec) maxConcurrentCalls() int {
	return orDefault(s.MaxConcurrentCalls, DefaultMaxConcurrentCalls)
}

func (s Spec) isolationIdleTimeout() time.Duration {
	return orDefault(s.IsolationIdleTimeout, DefaultIsolationIdleTimeout)
}
func (s Spec) isolationMax() int { return orDefault(s.IsolationMax, DefaultIsolationMax) }

func (s Spec) maxQueuedCalls() int {
	if s.MaxQueuedCalls < 0 {
		return 0
	}
	return orDefault(s.MaxQueuedCalls, DefaultMaxQueuedCalls)
}

func orDefault[T int | int64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
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
