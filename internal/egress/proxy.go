package egress

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"slices"
	"sync"
	"syscall"
	"time"
)

// Options configure a Proxy. The zero value (or nil) is usable: every
// field has a safe default.
type Options struct {
	// Resolver looks names up; nil means net.DefaultResolver. The proxy
	// looks a name up once per connection, as a rooted name ("host.").
	Resolver Resolver
	// NamesAddress reports whether a rule names addr (which host resolved
	// to, or which host is) for port, letting a special address through:
	// loopback, private, link-local, metadata and the rest of what
	// Classify does not call public. nil names none.
	NamesAddress func(host string, addr netip.Addr, port uint16) bool
	// Report is called once for every connection when it has ended (for
	// absolute-form HTTP, once per request), on the connection's
	// goroutine; Close and Shutdown wait for it. nil reports nothing.
	Report func(Report)
	// TLSPorts are the ports whose CONNECT tunnels must begin with a TLS
	// ClientHello naming the host decided. nil means 443 only.
	TLSPorts []uint16
	// MaxConns bounds the connections served at once; more wait to be
	// accepted. 0 means 256.
	MaxConns int
	// MaxHeaderBytes bounds a request head (line and headers); a larger
	// one is answered 431. 0 means 16 KiB. A response head from upstream
	// may be 64 times as large.
	MaxHeaderBytes int
	// HeadTimeout bounds reading a request head, and a ClientHello. 0
	// means 10 s.
	HeadTimeout time.Duration
	// DialTimeout bounds a lookup and each dial. 0 means 10 s.
	DialTimeout time.Duration
	// IdleTimeout ends a connection on which nothing has moved either way
	// for this long. 0 means 5 minutes.
	IdleTimeout time.Duration
}

// A Proxy is an egress proxy: see the package comment. Its methods are
// safe for concurrent use; it holds no state beyond its connections.
type Proxy struct {
	decider Decider
	opts    Options
	slots   chan struct{} // one per connection served, MaxConns in all

	mu        sync.Mutex
	closed    bool                             // Close or Shutdown has begun
	done      chan struct{}                    // closed when closed becomes true
	listeners map[net.Listener]struct{}        // being served
	conns     map[*net.Conn]context.CancelFunc // being carried, by identity
	wg        sync.WaitGroup                   // Serve loops, connections and their copiers
}

// ErrClosed is returned by Serve once Close or Shutdown has been called.
var ErrClosed = errors.New("egress: proxy closed")

// New returns a Proxy deciding each connection with d. A nil d refuses
// every connection. New does no I/O; Serve starts serving.
func New(d Decider, opts *Options) *Proxy {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Resolver == nil {
		o.Resolver = net.DefaultResolver
	}
	if o.TLSPorts == nil {
		o.TLSPorts = []uint16{443}
	} else {
		o.TLSPorts = slices.Clone(o.TLSPorts)
	}
	o.MaxConns = defaultInt(o.MaxConns, 256)
	o.MaxHeaderBytes = defaultInt(o.MaxHeaderBytes, 16<<10)
	o.HeadTimeout = defaultDuration(o.HeadTimeout, 10*time.Second)
	o.DialTimeout = defaultDuration(o.DialTimeout, 10*time.Second)
	o.IdleTimeout = defaultDuration(o.IdleTimeout, 5*time.Minute)
	return &Proxy{
		decider:   d,
		opts:      o,
		slots:     make(chan struct{}, o.MaxConns),
		done:      make(chan struct{}),
		listeners: map[net.Listener]struct{}{},
		conns:     map[*net.Conn]context.CancelFunc{},
	}
}

func defaultInt(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

func defaultDuration(v, def time.Duration) time.Duration {
	if v <= 0 {
		return def
	}
	return v
}

// Serve accepts connections on l and carries them until ctx ends or the
// Proxy is closed; it may be called for several listeners (a unix socket
// and a loopback port, say). Connections it accepted are ended when ctx
// ends (a Decider waiting for a human sees ctx end), and Serve returns
// only once they have: nil when ctx ended, ErrClosed after Close or
// Shutdown, else the error that stopped accepting. Serve closes l.
func (p *Proxy) Serve(ctx context.Context, l net.Listener) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		_ = l.Close()
		return ErrClosed
	}
	p.listeners[l] = struct{}{}
	p.wg.Add(1)
	p.mu.Unlock()
	defer p.wg.Done()

	var conns sync.WaitGroup // this listener's connections
	stop := context.AfterFunc(ctx, func() { _ = l.Close() })
	defer func() {
		stop()
		_ = l.Close()
		p.mu.Lock()
		delete(p.listeners, l)
		p.mu.Unlock()
		conns.Wait()
	}()
	var backoff time.Duration
	for {
		select {
		case p.slots <- struct{}{}:
		case <-ctx.Done():
			return nil
		case <-p.done:
			return ErrClosed
		}
		c, err := l.Accept()
		if err != nil {
			<-p.slots
			switch {
			case p.isClosed():
				return ErrClosed
			case ctx.Err() != nil:
				return nil
			case errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) || errors.Is(err, syscall.ECONNABORTED):
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				select {
				case <-time.After(backoff):
				case <-ctx.Done():
				case <-p.done:
				}
				continue
			}
			return fmt.Errorf("accepting egress connections: %w", err)
		}
		backoff = 0
		cctx, cancel := context.WithCancel(ctx)
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			cancel()
			_ = c.Close()
			<-p.slots
			return ErrClosed
		}
		p.conns[&c] = cancel
		p.wg.Add(1)
		conns.Add(1)
		p.mu.Unlock()
		go func() {
			defer func() {
				p.mu.Lock()
				delete(p.conns, &c)
				p.mu.Unlock()
				cancel()
				<-p.slots
				conns.Done()
				p.wg.Done()
			}()
			p.handle(cctx, c)
		}()
	}
}

func (p *Proxy) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// beginClose marks p closed, closes its listeners and returns whether it
// was the first call.
func (p *Proxy) beginClose() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.closed = true
		close(p.done)
	}
	for l := range p.listeners {
		_ = l.Close()
	}
}

// Close stops serving and ends every connection at once (a Decider sees
// its ctx end), then waits for every goroutine the Proxy started,
// reports included. It is idempotent and always returns nil.
func (p *Proxy) Close() error {
	p.beginClose()
	p.mu.Lock()
	for _, cancel := range p.conns {
		cancel()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return nil
}

// Shutdown stops accepting and waits for the connections being carried to
// end by themselves; when ctx ends first it ends them as Close does and
// returns ctx's error. It waits for every goroutine the Proxy started
// either way, and may be called more than once, and with Close.
func (p *Proxy) Shutdown(ctx context.Context) error {
	p.beginClose()
	idle := make(chan struct{})
	go func() { p.wg.Wait(); close(idle) }()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		_ = p.Close()
		<-idle
		return ctx.Err()
	}
}

// isTLSPort reports whether CONNECT tunnels to port must begin with a
// ClientHello.
func (p *Proxy) isTLSPort(port uint16) bool { return slices.Contains(p.opts.TLSPorts, port) }

// unlimited is a head limit that no longer limits.
const unlimited = math.MaxInt64
