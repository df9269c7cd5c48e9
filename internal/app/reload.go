package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/config"
	"github.com/mcpwarden/mcpwarden/internal/policydiff"
	"github.com/mcpwarden/mcpwarden/internal/recorded"
)

// Reload applies next, a changed config, to the running App. The whole
// new config was validated when it was loaded; one that changes settings
// that shape the process itself (listen, auth and profile tokens, audit,
// ask, telemetry, pinning, logging) takes a restart, and is refused whole,
// as is one whose naming would make two exposed tools collide. A good one
// is applied at once: the policy, naming and per-server settings are
// swapped in one step (calls in flight finish under what they started
// with) and upstream servers that were added, removed or changed are
// started, stopped or restarted; unchanged ones keep running. One reload
// runs at a time.
func (a *App) Reload(ctx context.Context, next *Setup) error {
	a.reloading.Lock()
	defer a.reloading.Unlock()
	if changed := restartOnly(a.current.Config, next.Config); len(changed) > 0 {
		return fmt.Errorf("%s changed, which takes a restart of mcpwarden", strings.Join(changed, ", "))
	}
	settings := next.Settings()
	if err := a.srv.CheckNaming(settings.Naming); err != nil {
		return err
	}
	added, removed, restarted := a.pool.Reconcile(ctx, next.Specs(a.headerFunc))
	a.srv.Reload(ctx, settings, removed)
	for _, name := range append(added, restarted...) {
		a.srv.UpstreamChanged(ctx, name)
	}
	old := a.current
	a.current = next
	a.logger.Info("config reloaded", "config", next.Config.File, "servers_added", added, "servers_removed", removed, "servers_restarted", restarted)
	if was, now := old.Policy.Shadowing(), next.Policy.Shadowing(); !reflect.DeepEqual(was, now) {
		if !now.On() {
			a.logger.Info("shadow mode is off: the policy is enforced everywhere")
		}
		logShadow(a.logger, next.Policy)
	}
	a.policyChanged(ctx, old, next)
	return nil
}

// The recent decisions a reload that changes the policy replays: the last
// replayMax decision events of the audit log's current file, read from at
// most its last replayBytes.
const (
	replayMax   = 1000
	replayBytes = 8 << 20
)

// policyChanged, when next's policy differs from old's, replays the recent
// decisions of the audit log (a file sink's current file) under both,
// warns if the new policy allows what the old one refused, with the first
// examples, and records a policy_changed event with both policies' hashes
// and the counts, whether or not anything was replayed.
func (a *App) policyChanged(ctx context.Context, old, next *Setup) {
	was, now := old.Policy.SHA256(), next.Policy.SHA256()
	if was == now {
		return
	}
	var res policydiff.Result
	detail := "no audit file to replay recent decisions from"
	if c := a.auditCfg; c.SinkName() == audit.SinkFile {
		reqs, err := recorded.Tail(c.Path, replayBytes, replayMax)
		if err != nil {
			a.logger.Warn("reading the recent decisions to compare the reloaded policy with", "err", err)
		}
		res = policydiff.Replay(reqs, old.Replayed(), next.Replayed())
		detail = fmt.Sprintf("%d recent decisions replayed: %d change, %d widen", res.Replayed, res.Changed, res.Widened)
	}
	if res.Widened > 0 {
		var examples []string
		for _, g := range res.Groups {
			for _, e := range g.Examples {
				if g.Widened && len(examples) < policydiff.MaxExamples {
					examples = append(examples, e.Request+": "+e.Old+" → "+e.New)
				}
			}
		}
		a.logger.Warn("the reloaded policy allows requests the old one refused; see mcpwarden policy diff",
			"widened", res.Widened, "recent_decisions", res.Replayed, "examples", examples, "config", next.Config.File)
	}
	e := audit.Event{
		Event:                audit.KindPolicyChanged,
		PolicySHA256:         now,
		PreviousPolicySHA256: was,
		Changed:              int64(res.Changed),
		Widened:              int64(res.Widened),
		Detail:               detail,
	}
	if err := a.audit.Write(ctx, e); err != nil {
		a.logger.Error("writing the policy_changed audit event", "err", err)
	}
}

// reloadFile loads the config file again and reloads it; a config that
// does not load, or that Reload refuses, is logged and the running one
// stays.
func (a *App) reloadFile(ctx context.Context) error {
	path := a.setup().Config.File
	next, err := a.o.Load()
	if err == nil {
		err = a.Reload(ctx, next)
	}
	if err != nil {
		a.logger.Error("config reload refused; the running config stays", "config", path, "err", err)
	}
	return err
}

// setup is the config in force.
func (a *App) setup() *Setup {
	a.reloading.Lock()
	defer a.reloading.Unlock()
	return a.current
}

// restartOnly lists the settings that differ between two configs and that
// a reload cannot apply.
func restartOnly(old, next *config.Config) []string {
	var changed []string
	same := func(key string, a, b any) {
		if !reflect.DeepEqual(a, b) {
			changed = append(changed, key)
		}
	}
	same("listen", old.Listen, next.Listen)
	same("auth", old.Auth, next.Auth)
	same("http", old.HTTP, next.HTTP)
	same("audit", old.Audit, next.Audit)
	same("replica", old.Replica, next.Replica)
	same("ask", old.Ask, next.Ask)
	same("log", old.Log, next.Log)
	same("pin", old.Pin, next.Pin)
	same("max_inflight_mb", old.MaxInflightMB, next.MaxInflightMB)
	same("metrics/tracing", old.Telemetry, next.Telemetry)
	for _, name := range next.ServerNames() {
		if o, ok := old.Servers[name]; ok && o.OnToolChange != next.Servers[name].OnToolChange {
			changed = append(changed, "servers."+name+".on_tool_change")
		}
	}
	tokens := func(c *config.Config) map[string][2][]string {
		m := map[string][2][]string{}
		for name, p := range c.Profiles {
			m[name] = [2][]string{p.TokensEnv, p.TokenSHA256}
		}
		return m
	}
	same("profiles' tokens", tokens(old), tokens(next))
	slices.Sort(changed)
	return changed
}

// watch reloads on SIGHUP and, with Options.Watch, when the config file
// changes, until ctx ends. It returns when it has stopped.
func (a *App) watch(ctx context.Context) error {
	path := a.setup().Config.File
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	var changes <-chan fsnotify.Event
	var watchErrs <-chan error
	if a.o.Watch {
		w, err := fsnotify.NewWatcher()
		if err != nil {
			return fmt.Errorf("watching %s: %w", path, err)
		}
		defer w.Close()
		// The directory, not the file: editors replace files by renaming.
		if err := w.Add(filepath.Dir(path)); err != nil {
			return fmt.Errorf("watching %s: %w", path, err)
		}
		changes, watchErrs = w.Events, w.Errors
	}
	abs, _ := filepath.Abs(path)
	var debounce <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-hup:
			a.logger.Info("SIGHUP: reloading the config", "config", path)
			_ = a.reloadFile(ctx)
		case ev := <-changes:
			if p, _ := filepath.Abs(ev.Name); p == abs && ev.Op&(fsnotify.Write|fsnotify.Create|fsnotify.Rename) != 0 {
				debounce = time.After(300 * time.Millisecond) // let the editor finish writing
			}
		case err := <-watchErrs:
			if !errors.Is(err, fsnotify.ErrEventOverflow) {
				a.logger.Warn("watching the config", "err", err)
			}
		case <-debounce:
			debounce = nil
			a.logger.Info("the config file changed: reloading", "config", path)
			_ = a.reloadFile(ctx)
		}
	}
}
