package app

import (
	"maps"
	"slices"

	"github.com/mcpwarden/mcpwarden/internal/config"
	"github.com/mcpwarden/mcpwarden/rules"
)

// logSummary logs, once at start, what is being served: the servers up,
// still starting and down, the tools exposed and hidden (per profile, when there are profiles), the
// listen address and where the audit log goes.
func (a *App) logSummary() {
	st, pool, profile := a.setup(), a.pool, a.o.Profile
	// A server still on its first start (startup_wait passed first) is
	// starting, not down: a package runner may be downloading it.
	var up, starting, down []string
	for _, name := range pool.Names() {
		switch err := pool.Err(name); {
		case err == nil:
			up = append(up, name)
		case startingNow(err):
			starting = append(starting, name)
		default:
			down = append(down, name)
		}
	}
	profiles := []string{profile}
	if profile == "" && st.Config.Listen != "" && st.Config.Listen != config.ListenStdio && len(st.Config.Profiles) > 0 {
		profiles = slices.Sorted(maps.Keys(st.Config.Profiles))
	}
	for _, p := range profiles {
		exposed, hidden := 0, 0
		for _, name := range up {
			tools, _ := pool.Tools(name)
			for _, t := range tools {
				if st.Policy.Hidden(rules.Call{Profile: p, Server: name, Tool: t.Name}) {
					hidden++
				} else {
					exposed++
				}
			}
		}
		attrs := []any{"tools_exposed", exposed, "tools_hidden", hidden}
		if p != "" {
			attrs = append(attrs, "profile", p)
		}
		a.logger.Info("policy applied", attrs...)
	}
	where := a.auditCfg.SinkName()
	if a.auditCfg.Path != "" {
		where += " " + a.auditCfg.Path
	}
	listen := st.Config.Listen
	if listen == "" {
		listen = config.ListenStdio
	}
	a.logger.Info("mcpwarden ready", "servers_up", up, "servers_starting", starting, "servers_down", down, "listen", listen, "audit", where, "policy_sha256", st.Policy.SHA256())
}
