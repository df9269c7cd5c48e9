package config

import "fmt"

// validateIsolation checks the isolation keys of server name: isolation is
// one of the Isolation values and only for a server mcpwarden starts.
func (s Server) validateIsolation(name string) []error {
	var errs []error
	add := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("servers.%s"+format, append([]any{name}, args...)...))
	}
	switch s.Isolation {
	case "", IsolationShared:
	case IsolationPerPrincipal, IsolationPerSession:
		if s.EffectiveTransport() != TransportStdio {
			add(".isolation: %q is only for a server mcpwarden starts (command); a url server is one process that mcpwarden does not run", s.Isolation)
		}
	default:
		add(".isolation: %q is not one of %s, %s, %s", s.Isolation, IsolationShared, IsolationPerPrincipal, IsolationPerSession)
	}
	if s.IsolationIdleTimeout < 0 {
		add(".isolation_idle_timeout: must not be negative")
	}
	if s.IsolationMax < 0 {
		add(".isolation_max: must not be negative")
	}
	return errs
}
