package app

import (
	"errors"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/mcpwarden/mcpwarden/internal/config"
	"github.com/mcpwarden/mcpwarden/internal/textcut"
	"github.com/mcpwarden/mcpwarden/rules"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// firstStartNotes say, for a command that fetches its server when it first
// runs, why that start is slow: a slow first start is not a failure.
var firstStartNotes = map[string]string{
	"npx":    "first start downloads the package",
	"pnpx":   "first start downloads the package",
	"bunx":   "first start downloads the package",
	"uvx":    "first start downloads the package",
	"pipx":   "first start downloads the package",
	"docker": "first start pulls the image",
	"podman": "first start pulls the image",
}

// logStarting logs, at info, each upstream being started or connected to,
// in name order, so that a slow start shows as one.
func logStarting(logger *slog.Logger, cfg *config.Config) {
	for _, name := range cfg.ServerNames() {
		s := cfg.Servers[name]
		if s.URL != "" {
			logger.Info("connecting to upstream", "server", name, "url", s.URL)
			continue
		}
		cmdline, _ := textcut.Head(strings.Join(append([]string{s.Command}, s.Args...), " "), 200)
		attrs := []any{"server", name, "command", cmdline}
		base := strings.TrimSuffix(filepath.Base(s.Command), ".exe")
		if note := firstStartNotes[base]; note != "" {
			attrs = append(attrs, "note", note)
		}
		logger.Info("starting upstream", attrs...)
	}
}

// startingNow reports whether err, an upstream's from Pool.Err, says that
// its first attempt to start is still in progress: it is starting, not
// down.
func startingNow(err error) bool {
	var u *upstream.UnavailableError
	return errors.As(err, &u) && u.Err == nil && u.RetryIn == 0 && !u.EverUp && !u.Closed && !u.Removed
}

// logShadow says, at warn level, where shadow mode is on (enforce: shadow):
// there the policy decides and audits but refuses nothing. It says nothing
// when shadow mode is off everywhere.
func logShadow(logger *slog.Logger, p *rules.Policy) {
	if sc := p.Shadowing(); sc.On() {
		logger.Warn("shadow mode is on (enforce: shadow): what the policy would ask about or deny is audited with shadow: true and forwarded, nobody asked; built-in refusals still refuse",
			"servers", sc.Servers, "profiles", sc.Profiles)
	}
}

// askWarning says, when the policy can ask and no one may be there to
// answer, who cannot and what to write; "" when an approvals page or a
// resolver answers. Every policy can ask (the default is ask, and a path
// outside a workspace is asked about) unless its default, and every
// server's and profile's, is allow or deny with no ask rules.
func askWarning(cfg *config.Config) string {
	if cfg.Ask.Approvals == config.ApprovalsLocal || len(cfg.Ask.Resolver.Command) > 0 || cfg.Ask.Resolver.URL != "" || !canAsk(cfg) {
		return ""
	}
	if cfg.Ask.Elicitation != nil && !*cfg.Ask.Elicitation {
		return "the policy can ask, but no one can answer: ask.elicitation is false and there is no approvals page or ask.resolver, so every ask is refused; set ask.approvals: local for an approvals page"
	}
	return "the policy can ask, but only a client that shows MCP elicitation forms can answer (some never do, such as codex exec): their asks are refused; set ask.approvals: local for an approvals page"
}

// canAsk reports whether a gate of the config may decide ask.
func canAsk(cfg *config.Config) bool {
	if cfg.Policy.Default == "" || cfg.Policy.Default == "ask" || len(cfg.Policy.Ask) > 0 || cfg.Policy.OutsideWorkspace != "deny" && len(cfg.Policy.Workspace) > 0 {
		return true
	}
	for _, s := range cfg.Servers {
		p := s.Policy
		if p.Default == "ask" || len(p.Ask) > 0 || p.OutsideWorkspace != "deny" && (len(p.Workspace) > 0 || p.WorkspaceFromRoots) {
			return true
		}
	}
	for _, p := range cfg.Profiles {
		if p.Policy.Default == "ask" || len(p.Policy.Ask) > 0 {
			return true
		}
	}
	return false
}
