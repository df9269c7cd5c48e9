// Package app is mcpwarden's composition root: it builds the audit log,
// the telemetry, the resolvers of asks, the upstream pool and the proxy
// from a loaded config, wires them together once, serves, reloads and
// shuts them down in order. The commands in cmd/mcpwarden only parse
// flags, load the config and call it.
package app

import (
	"context"
	"os"
	"path/filepath"

	"github.com/mcpwarden/mcpwarden/internal/config"
	"github.com/mcpwarden/mcpwarden/internal/oauthlogin"
	"github.com/mcpwarden/mcpwarden/internal/pin"
	"github.com/mcpwarden/mcpwarden/proxy"
	"github.com/mcpwarden/mcpwarden/proxy/naming"
	"github.com/mcpwarden/mcpwarden/rules"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// A Setup is a loaded, validated config and its compiled policy: what
// serve, check and validate all start from, so that they decide alike.
type Setup struct {
	Config *config.Config
	Policy *rules.Policy
	// WorkDir is the directory mcpwarden runs in: the root of stdio
	// servers without cwd.
	WorkDir string
	// protected are the files self-protection guards (mcpwarden's own and
	// the host's that route clients through it): no sandbox makes them
	// writable.
	protected []string
	// launcher is mcpwarden's own executable, which runs the sandbox
	// launcher; "" when it cannot be found.
	launcher string
}

// NewSetup compiles the policy of cfg, a loaded config, for mcpwarden
// running in workDir, with the built-in self-protection guarding its own
// files and those that route clients through it (see protectSelf).
func NewSetup(cfg *config.Config, workDir string) (*Setup, error) {
	return newSetup(cfg, workDir, realHost())
}

// newSetup is NewSetup on host h.
func newSetup(cfg *config.Config, workDir string, h host) (*Setup, error) {
	spec := cfg.RulesSpecIn(workDir)
	protectSelf(&spec, cfg, workDir, h)
	policy, err := rules.Compile(spec)
	if err != nil {
		return nil, err
	}
	launcher, _ := h.executable()
	return &Setup{Config: cfg, Policy: policy, WorkDir: workDir, protected: spec.Protected, launcher: launcher}, nil
}

// Specs are the upstream servers as the config describes them, adding
// headerFunc's headers (the trace context of each call) to every request
// to an HTTP or SSE upstream, next to the configured headers; nil adds
// none.
func (s *Setup) Specs(headerFunc func(context.Context) map[string]string) map[string]upstream.Spec {
	specs := make(map[string]upstream.Spec, len(s.Config.Servers))
	for name, srv := range s.Config.Servers {
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

			Isolation:            isolation(srv.Isolation),
			IsolationIdleTimeout: srv.IsolationIdleTimeout,
			IsolationMax:         srv.IsolationMax,
			OAuth:                oauthlogin.UpstreamOAuth(name, srv, os.Getenv),
			NoSampling:           srv.Policy.Sampling == rules.SamplingDeny,
		}
		switch srv.EffectiveTransport() {
		case config.TransportHTTP:
			spec.Transport = upstream.TransportHTTP
		case config.TransportSSE:
			spec.Transport = upstream.TransportSSE
		default:
			spec.Transport = upstream.TransportStdio
			spec.Dir = s.Config.ServerDir(name, s.WorkDir)
			if srv.Cwd != "" {
				spec.DirOrigin = s.Config.Origin("servers." + name + ".cwd")
			}
			spec.Sandbox = s.sandbox(name)
		}
		specs[name] = spec
	}
	return specs
}

// isolation is the upstream Isolation of a validated config value.
func isolation(v string) upstream.Isolation {
	switch v {
	case config.IsolationPerPrincipal:
		return upstream.IsolationPerPrincipal
	case config.IsolationPerSession:
		return upstream.IsolationPerSession
	default:
		return upstream.IsolationShared
	}
}

// LockPath is the tool pin lock file's path.
func (s *Setup) LockPath() string {
	path := s.Config.Pin.Lock
	if path == "" {
		path = config.DefaultLockFile
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(s.Config.Dir, path)
	}
	return path
}

// Pinning is the rug-pull defence as the config sets it, with its lock.
func (s *Setup) Pinning() (*proxy.Pinning, error) {
	lock, err := pin.Load(s.LockPath())
	if err != nil {
		return nil, err
	}
	p := &proxy.Pinning{Lock: lock, Default: s.Config.Pin.OnToolChange, OnChange: map[string]pin.Reaction{}}
	for name, srv := range s.Config.Servers {
		p.OnChange[name] = srv.OnToolChange
	}
	return p, nil
}

// ServerOptions are each server's options as the proxy applies them: its
// policy.sampling, and whether its paths are decided with symlinks
// followed too: resolve_symlinks where it is set (true for a remote server
// that runs on this machine), else for every stdio server.
func (s *Setup) ServerOptions() map[string]proxy.ServerOptions {
	out := make(map[string]proxy.ServerOptions, len(s.Config.Servers))
	for name, srv := range s.Config.Servers {
		out[name] = serverOptions(srv)
	}
	return out
}

// serverOptions are the options of one server of the config.
func serverOptions(srv config.Server) proxy.ServerOptions {
	resolve := srv.EffectiveTransport() == config.TransportStdio
	if srv.ResolveSymlinks != nil {
		resolve = *srv.ResolveSymlinks
	}
	return proxy.ServerOptions{Sampling: srv.Policy.Sampling, ResolveSymlinks: resolve}
}

// Settings are what a reload replaces in the proxy.
func (s *Setup) Settings() proxy.Settings {
	return proxy.Settings{Policy: s.Policy, Naming: s.Naming(), Servers: s.ServerOptions()}
}

// Naming is how the config names tools on the wire.
func (s *Setup) Naming() naming.Scheme {
	n := naming.Scheme{
		Separator:  s.Config.Naming.Separator,
		Aliases:    make(map[string]map[string]string, len(s.Config.Servers)),
		Unprefixed: map[string]bool{},
	}
	for name, srv := range s.Config.Servers {
		n.Aliases[name] = srv.Aliases
		if srv.Prefix != nil && !*srv.Prefix {
			n.Unprefixed[name] = true
		}
	}
	return n
}
