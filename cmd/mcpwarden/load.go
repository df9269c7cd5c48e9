package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/config"
	"github.com/mcpwarden/mcpwarden/internal/oauthlogin"
	"github.com/mcpwarden/mcpwarden/internal/pin"
	"github.com/mcpwarden/mcpwarden/proxy"
	"github.com/mcpwarden/mcpwarden/rules"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// A setup is a loaded, validated config and its compiled policy: what
// serve, check and validate all start from, so that they decide alike.
type setup struct {
	cfg     *config.Config
	policy  *rules.Policy
	workDir string // the directory mcpwarden runs in: root of stdio servers without cwd
	// peer, when set before the upstreams start, answers their requests to
	// the client side (serve sets it to the proxy).
	peer upstream.Peer
	// background, when set before the upstreams start, returns from
	// starting them at once (serve sets it: see upstream.Options.Background).
	background bool
}

// loadSetup loads and validates the config at path and compiles its
// policy. Every failure is a usage error (exit 2) naming the file.
func loadSetup(path string) (*setup, error) {
	if path == "" {
		return nil, &codeError{code: exitUsage, err: fmt.Errorf("--config FILE is required")}
	}
	cfg, err := config.Load(path, os.Environ())
	if err != nil {
		return nil, &codeError{code: exitUsage, err: err}
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintln(os.Stderr, "warning:", w)
	}
	workDir, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	st, err := newSetup(cfg, workDir)
	if err != nil {
		// Each error names its source: the file, or the variable that set the key.
		return nil, &codeError{code: exitUsage, err: cfg.Attribute(err)}
	}
	return st, nil
}

// newSetup compiles the policy of cfg, a loaded config, for mcpwarden
// running in workDir: loadSetup's second half, which tests share.
func newSetup(cfg *config.Config, workDir string) (*setup, error) {
	policy, err := rules.Compile(cfg.RulesSpecIn(workDir))
	if err != nil {
		return nil, err
	}
	return &setup{cfg: cfg, policy: policy, workDir: workDir}, nil
}

// startUpstreams starts every configured upstream server. onEvent, when not
// nil, hears of each server's connects, losses, restarts and tool changes.
func (s *setup) startUpstreams(ctx context.Context, logger *slog.Logger, onEvent func(upstream.Event)) *upstream.Pool {
	return s.startUpstreamsWith(ctx, logger, onEvent, nil)
}

// startUpstreamsWith is startUpstreams adding headerFunc's headers (the
// trace context of each call) to every request to an HTTP or SSE
// upstream, next to the configured headers; nil adds none.
func (s *setup) startUpstreamsWith(ctx context.Context, logger *slog.Logger, onEvent func(upstream.Event), headerFunc func(context.Context) map[string]string) *upstream.Pool {
	return upstream.Start(ctx, s.specs(headerFunc), &upstream.Options{
		Logger:     logger,
		ClientInfo: mcp.Implementation{Name: "mcpwarden", Version: version()},
		OnEvent:    onEvent,
		Peer:       s.peer,
		Background: s.background,
	})
}

// specs are the upstream servers as the config describes them.
func (s *setup) specs(headerFunc func(context.Context) map[string]string) map[string]upstream.Spec {
	specs := make(map[string]upstream.Spec, len(s.cfg.Servers))
	for name, srv := range s.cfg.Servers {
		spec := upstream.Spec{
			Command:     srv.Command,
			Args:        srv.Args,
			Env:         srv.Env,
			URL:         srv.URL,
			Headers:     srv.Headers,
			HeaderFunc:  headerFunc,
			InitTimeout: srv.InitTimeout,

			CallTimeout:        srv.CallTimeout,
			MaxResultBytes:     srv.MaxResultBytes,
			MaxConcurrentCalls: srv.MaxConcurrentCalls,
			MaxQueuedCalls:     srv.MaxQueuedCalls,
			OAuth:              oauthlogin.UpstreamOAuth(name, srv, os.Getenv),
		}
		switch srv.EffectiveTransport() {
		case config.TransportHTTP:
			spec.Transport = upstream.TransportHTTP
		case config.TransportSSE:
			spec.Transport = upstream.TransportSSE
		default:
			spec.Transport = upstream.TransportStdio
			spec.Dir = s.cfg.ServerDir(name, s.workDir)
		}
		specs[name] = spec
	}
	return specs
}

// lockPath is the tool pin lock file's path.
func (s *setup) lockPath() string {
	path := s.cfg.Pin.Lock
	if path == "" {
		path = config.DefaultLockFile
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(s.cfg.Dir, path)
	}
	return path
}

// pinning is the rug-pull defence as the config sets it, with its lock.
func (s *setup) pinning() (*proxy.Pinning, error) {
	lock, err := pin.Load(s.lockPath())
	if err != nil {
		return nil, err
	}
	p := &proxy.Pinning{Lock: lock, Default: s.cfg.Pin.OnToolChange, OnChange: map[string]string{}}
	for name, srv := range s.cfg.Servers {
		p.OnChange[name] = srv.OnToolChange
	}
	return p, nil
}

// samplingDenied names the servers whose policy denies sampling.
func (s *setup) samplingDenied() map[string]bool {
	out := map[string]bool{}
	for name, srv := range s.cfg.Servers {
		if srv.Policy.Sampling == "deny" {
			out[name] = true
		}
	}
	return out
}

// logger builds the human log on w, redacted as the audit log is: at the
// --log-level and --log-format flags, else the config's log settings,
// else level and text.
func (s *setup) logger(w io.Writer, g *globals, level string) (*slog.Logger, *audit.Redactor, error) {
	redactor, err := audit.NewRedactor(s.cfg.Audit)
	if err != nil {
		return nil, nil, &codeError{code: exitUsage, err: fmt.Errorf("config %s: %w", s.cfg.File, err)}
	}
	redactor = redactor.ForLogs()
	logger, err := newLogger(w, first(g.logLevel, s.cfg.Log.Level, level), first(g.logFormat, s.cfg.Log.Format), redactor.ReplaceAttr)
	if err != nil {
		return nil, nil, &codeError{code: exitUsage, err: err}
	}
	return logger, redactor, nil
}

// resolveSymlinks names the servers whose paths are decided with symlinks
// followed too: resolve_symlinks where it is set (true for a remote server
// that runs on this machine), else every stdio server.
func (s *setup) resolveSymlinks() map[string]bool {
	out := map[string]bool{}
	for name, srv := range s.cfg.Servers {
		on := srv.EffectiveTransport() == config.TransportStdio
		if srv.ResolveSymlinks != nil {
			on = *srv.ResolveSymlinks
		}
		if on {
			out[name] = true
		}
	}
	return out
}

// naming is how the config names tools on the wire.
func (s *setup) naming() proxy.Naming {
	n := proxy.Naming{
		Separator:  s.cfg.Naming.Separator,
		Aliases:    make(map[string]map[string]string, len(s.cfg.Servers)),
		Unprefixed: map[string]bool{},
	}
	for name, srv := range s.cfg.Servers {
		n.Aliases[name] = srv.Aliases
		if srv.Prefix != nil && !*srv.Prefix {
			n.Unprefixed[name] = true
		}
	}
	return n
}
