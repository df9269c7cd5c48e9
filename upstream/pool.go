package upstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// ErrUnknownServer is returned for a server name the pool was not given.
var ErrUnknownServer = errors.New("unknown upstream server")

// Options configure a Pool. The zero value is usable.
type Options struct {
	// Logger receives connection events and upstream stderr; nil discards.
	Logger *slog.Logger
	// ClientInfo is what mcpwarden calls itself in initialize.
	ClientInfo mcp.Implementation
}

// A Pool holds one session per upstream server. A server that failed to
// start stays in the pool with its error, so that calls to it fail with a
// clear message while the other servers work. A Pool is safe for concurrent
// use.
type Pool struct {
	servers map[string]*server // fixed at Start
}

// A server is one upstream's session, or the error it failed with.
type server struct {
	name   string
	client *client.Client
	proc   *process
	tools  []mcp.Tool
	info   mcp.Implementation
	err    error
	cancel context.CancelFunc // ends the session's context

	closeOnce sync.Once
}

// Start connects to every server in specs concurrently: it starts or dials
// it, initializes the session and lists all its tools (following
// pagination). It returns when each has succeeded or failed; a failure is
// kept on its server (see Err) and does not stop the others.
func Start(ctx context.Context, specs map[string]Spec, opts *Options) *Pool {
	if opts == nil {
		opts = &Options{}
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	info := opts.ClientInfo
	if info.Name == "" {
		info = mcp.Implementation{Name: "mcpwarden", Version: "dev"}
	}
	p := &Pool{servers: make(map[string]*server, len(specs))}
	var wg sync.WaitGroup
	for name, spec := range specs {
		s := &server{name: name}
		p.servers[name] = s
		wg.Go(func() {
			s.err = s.connect(ctx, spec, info, logger.With("server", name))
		})
	}
	wg.Wait()
	return p
}

func (s *server) connect(ctx context.Context, spec Spec, info mcp.Implementation, logger *slog.Logger) error {
	timeout := spec.InitTimeout
	if timeout <= 0 {
		timeout = DefaultInitTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	var stderr *stderrLog
	c, err := s.newClient(spec, logger, &stderr)
	if err != nil {
		return fmt.Errorf("upstream %q: %w", s.name, err)
	}
	s.client = c
	fail := func(step string, err error) error {
		s.close()
		msg := fmt.Sprintf("upstream %q: %s: %v", s.name, step, err)
		if errors.Is(err, context.DeadlineExceeded) {
			msg += fmt.Sprintf(" (no answer within init_timeout %s)", timeout)
		}
		if stderr != nil {
			if tail := stderr.tail(); tail != "" {
				msg += "; its stderr ended with:\n" + tail
			}
		}
		return errors.New(msg)
	}
	// The session outlives this call: it runs under its own context, ended
	// by close. Starting is still bounded by the init timeout.
	life, cancelLife := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancelLife
	stopWatch := context.AfterFunc(ctx, cancelLife)
	err = c.Start(life)
	if !stopWatch() {
		err = errors.Join(err, ctx.Err())
	}
	if err != nil {
		return fail("starting", err)
	}
	init, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.LATEST_PROTOCOL_VERSION,
		ClientInfo:      info,
	}})
	if err != nil {
		return fail("initializing", err)
	}
	s.info = init.ServerInfo
	if init.Capabilities.Tools != nil {
		res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
		if err != nil {
			return fail("listing tools", err)
		}
		s.tools = res.Tools
	}
	logger.Info("upstream ready", "transport", spec.Transport, "upstream", init.ServerInfo.Name, "version", init.ServerInfo.Version, "tools", len(s.tools))
	return nil
}

// newClient builds the client for spec's transport without starting it. For
// a stdio server it also sets s.proc and *stderr.
func (s *server) newClient(spec Spec, logger *slog.Logger, stderr **stderrLog) (*client.Client, error) {
	switch spec.Transport {
	case TransportStdio:
		if spec.Command == "" {
			return nil, errors.New("no command to run")
		}
		*stderr = &stderrLog{logger: logger}
		s.proc = &process{logger: logger}
		env := make([]string, 0, len(spec.Env))
		for _, k := range slices.Sorted(maps.Keys(spec.Env)) {
			env = append(env, k+"="+spec.Env[k])
		}
		t := transport.NewStdioWithOptions(spec.Command, env, spec.Args,
			transport.WithCommandFunc(s.proc.command(spec.Dir, *stderr)),
			transport.WithCommandLogger(logger))
		return client.NewClient(t), nil
	case TransportHTTP:
		t, err := transport.NewStreamableHTTP(spec.URL,
			transport.WithHTTPHeaders(spec.Headers),
			transport.WithHTTPLogger(logger))
		if err != nil {
			return nil, err
		}
		return client.NewClient(t), nil
	case TransportSSE:
		t, err := transport.NewSSE(spec.URL, transport.WithHeaders(spec.Headers))
		if err != nil {
			return nil, err
		}
		return client.NewClient(t), nil
	default:
		return nil, fmt.Errorf("unknown transport %v", spec.Transport)
	}
}

// close ends the session and, for a stdio server, its process group.
func (s *server) close() error {
	var err error
	s.closeOnce.Do(func() {
		if s.client != nil {
			err = s.client.Close()
		}
		if s.cancel != nil {
			s.cancel()
		}
		if s.proc != nil {
			s.proc.killGroup()
		}
	})
	return err
}

// Names returns the servers' names, sorted.
func (p *Pool) Names() []string {
	return slices.Sorted(maps.Keys(p.servers))
}

// Err is the error the server failed to start with, nil when it is up, or
// ErrUnknownServer.
func (p *Pool) Err(name string) error {
	s, ok := p.servers[name]
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownServer, name)
	}
	return s.err
}

// Tools returns the tools the server listed when it started. The slice is
// shared: do not modify it.
func (p *Pool) Tools(name string) ([]mcp.Tool, error) {
	s, ok := p.servers[name]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownServer, name)
	}
	return s.tools, s.err
}

// Call forwards a tools/call to the server, with params as given (the
// upstream tool name, the arguments and _meta), and returns its result.
func (p *Pool) Call(ctx context.Context, name string, params mcp.CallToolParams) (*mcp.CallToolResult, error) {
	s, ok := p.servers[name]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownServer, name)
	}
	if s.err != nil {
		return nil, fmt.Errorf("upstream %q is not available: %w", name, s.err)
	}
	res, err := s.client.CallTool(ctx, mcp.CallToolRequest{Params: params})
	if err != nil {
		return nil, fmt.Errorf("calling %q on upstream %q: %w", params.Name, name, err)
	}
	return res, nil
}

// Close ends every session and stops every stdio server's process group,
// concurrently. It is idempotent.
func (p *Pool) Close() error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for _, s := range p.servers {
		wg.Go(func() {
			if err := s.close(); err != nil && !isShutdownNoise(err) {
				mu.Lock()
				errs = append(errs, fmt.Errorf("closing upstream %q: %w", s.name, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// isShutdownNoise reports errors that only say the child was stopped.
func isShutdownNoise(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "signal: terminated") || strings.Contains(msg, "signal: killed") || strings.Contains(msg, "file already closed")
}
