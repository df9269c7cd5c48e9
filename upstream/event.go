package upstream

import (
	"time"

	"github.com/mcpwarden/mcpwarden/internal/sandbox"

	"github.com/mark3labs/mcp-go/mcp"
)

// An EventKind says what happened to an upstream server.
type EventKind uint8

// Event kinds.
const (
	// EventConnected: the server is up for the first time; Tools is its
	// tool list.
	EventConnected EventKind = iota + 1
	// EventFailed: an attempt to start the server failed; Err says why and
	// when the next attempt is due (Attempt, RetryIn).
	EventFailed
	// EventLost: the session ended unexpectedly (the process exited, the
	// connection dropped); Err says why. Calls fail with ErrUnavailable until
	// EventRestarted.
	EventLost
	// EventRestarted: the server is up again after EventLost or after
	// failed attempts; Tools is its tool list, ToolsChanged whether it
	// differs from the one it had before.
	EventRestarted
	// EventToolsChanged: the server sent notifications/tools/list_changed
	// and its re-listed tools differ; Tools is the new list.
	EventToolsChanged
	// EventRemoved: Reconcile removed the server from the pool; its session
	// is closed and its process group stopped. It is the server's last
	// event. A server whose Spec changed is not removed but replaced: the
	// replacement reports EventConnected (or EventFailed) as a new server.
	EventRemoved
	// EventReinitialized: a remote server answered 404 for its session (it
	// restarted, or expired the session) and a new session was initialized
	// at once, without backoff; it is not a crash. Tools and ToolsChanged
	// are as for EventRestarted.
	EventReinitialized
)

func (k EventKind) String() string {
	switch k {
	case EventConnected:
		return "connected"
	case EventFailed:
		return "failed"
	case EventLost:
		return "lost"
	case EventRestarted:
		return "restarted"
	case EventToolsChanged:
		return "tools_changed"
	case EventRemoved:
		return "removed"
	case EventReinitialized:
		return "reinitialized"
	default:
		return "unknown"
	}
}

// MarshalText makes an EventKind its String in JSON and logs.
func (k EventKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// An Event is a change in one upstream server's state, as reported to
// Options.OnEvent.
type Event struct {
	Server string
	Kind   EventKind
	// Err is why the server is down (EventFailed, EventLost); it wraps
	// ErrUnavailable.
	Err error
	// Tools is the server's tool list after the event (EventConnected,
	// EventRestarted, EventToolsChanged). The slice is shared: do not
	// modify it.
	Tools []mcp.Tool
	// ToolsChanged reports, for EventRestarted, whether Tools differs from
	// the list before the restart; it is always true for EventToolsChanged.
	ToolsChanged bool
	// Attempt is the number of the next start attempt and RetryIn how long
	// until it (EventFailed, EventLost).
	Attempt int
	RetryIn time.Duration
	// Sandbox is what confines the server's process (EventConnected,
	// EventRestarted), as its launcher reported it; nil when it runs
	// unconfined or is not a stdio server.
	Sandbox *sandbox.Report
	// SandboxOff is set instead for a stdio server started unconfined
	// (its sandbox is off).
	SandboxOff bool
	// SandboxExposed are the files self-protection guards that the
	// sandbox's grants reach all the same, each with the grant.
	SandboxExposed []string
}
