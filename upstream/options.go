package upstream

import (
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// Restart backoff defaults: the delay before a restart doubles from
// DefaultMinBackoff with every consecutive failure up to DefaultMaxBackoff,
// each delay jittered by ±20%. A session that stayed up for backoffReset
// counts as a success, so the next loss starts from the minimum again.
const (
	DefaultMinBackoff = 500 * time.Millisecond
	DefaultMaxBackoff = 30 * time.Second
	backoffReset      = 10 * time.Second
)

// Options configure a Pool. The zero value is usable.
type Options struct {
	// Logger receives connection events and upstream stderr; nil discards.
	Logger *slog.Logger
	// ClientInfo is what mcpwarden calls itself in initialize.
	ClientInfo mcp.Implementation
	// OnEvent, if set, is called for every change in a server's state (see
	// EventKind), including the first connect attempts made by Start and
	// Reconcile. Events of one server come in order, from that server's
	// supervisor goroutine; events of different servers may come
	// concurrently. OnEvent should return quickly (the server is not
	// restarted or re-listed meanwhile); it may call the Pool's methods
	// other than Reconcile and Close, which wait for supervisors (possibly
	// the calling one).
	OnEvent func(Event)
	// MinBackoff and MaxBackoff bound the delay between restart attempts;
	// 0 means DefaultMinBackoff and DefaultMaxBackoff.
	MinBackoff, MaxBackoff time.Duration
	// Background makes Start return at once, its servers' first attempts
	// going on in the background (reported by EventConnected or
	// EventFailed; see WaitStarted), so that one slow server delays
	// nothing. Calls to a server still starting wait for it (see Call).
	Background bool
}

// A supervisorEnv is what the supervisors of one pool share with it,
// fixed when the pool starts: its options, its peer, the spawner of its
// stdio children and the group of its goroutines. A
// supervisor reaches nothing else of the pool, neither its servers nor its
// lock: only the pool changes which servers it has.
type supervisorEnv struct {
	opts Options // Logger and ClientInfo set
	// client is the peer given to Pool.Start, before any supervisor runs;
	// nil when there is none.
	client Peer
	spawn  *spawner       // starts the stdio children; closed after group has ended
	group  sync.WaitGroup // the supervisors and what they start
}

// newSupervisorEnv is the env of a pool with opts, Logger and ClientInfo
// defaulted; it starts the spawner.
func newSupervisorEnv(opts Options) *supervisorEnv {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.ClientInfo.Name == "" {
		opts.ClientInfo = mcp.Implementation{Name: "mcpwarden", Version: "dev"}
	}
	return &supervisorEnv{opts: opts, spawn: newSpawner()}
}

// peer is where the upstreams' notifications and requests go; nil when
// there is none.
func (e *supervisorEnv) peer() Peer { return e.client }

// backoff is the delay after the given number of consecutive failures.
func (e *supervisorEnv) backoff(failures int) time.Duration {
	lo, hi := orDefault(e.opts.MinBackoff, DefaultMinBackoff), orDefault(e.opts.MaxBackoff, DefaultMaxBackoff)
	d := lo
	for i := 1; i < failures && d < hi; i++ {
		d *= 2
	}
	d = min(d, hi)
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}
