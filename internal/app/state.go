package app

import (
	"context"
	"fmt"
	"os"

	"github.com/mcpwarden/mcpwarden/internal/config"
	"github.com/mcpwarden/mcpwarden/internal/state"
	stateredis "github.com/mcpwarden/mcpwarden/internal/state/redis"
	"github.com/mcpwarden/mcpwarden/internal/telemetry"
)

// openState connects to the state replicas share (config state:), or
// returns nil without a state block: everything then stays in this
// process, as with one replica. A state that cannot be reached at start
// is an error, not a fall-back to memory. obs, when set, is told of
// every operation (mcpwarden_state_* metrics).
func openState(ctx context.Context, cfg *config.Config, obs state.Observer) (state.Store, error) {
	sc := cfg.State
	if sc == nil {
		return nil, nil
	}
	o := stateredis.Options{URL: sc.URL, Namespace: sc.Namespace, Observer: obs}
	if sc.PasswordEnv != "" {
		o.Password = os.Getenv(sc.PasswordEnv)
		if o.Password == "" {
			return nil, &ConfigError{fmt.Errorf("state.password_env: environment variable %s is empty or not set", sc.PasswordEnv)}
		}
	}
	s, err := stateredis.Open(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("opening the shared state (state.url): %w", err)
	}
	return s, nil
}

// CheckState reports whether the shared state can be reached now, for
// readiness: nil without a state block.
func (a *App) CheckState(ctx context.Context) error {
	if a.state == nil {
		return nil
	}
	return a.state.Check(ctx)
}

// readyChecks are the readiness checks besides the upstreams': the shared
// state's reachability, when there is one. a.state must be open.
func (a *App) readyChecks() []telemetry.Check {
	if a.state == nil {
		return nil
	}
	return []telemetry.Check{{Name: "state", Run: a.state.Check}}
}
