package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/mcpwarden/mcpwarden/internal/config"
	"github.com/mcpwarden/mcpwarden/proxy"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// A reloader applies a changed config file to a running serve: the whole
// new config is validated first, and a bad one is refused and logged while
// the running one stays. A good one is applied at once: the policy, naming
// and sampling settings are swapped atomically (calls in flight finish
// under the policy they started with) and upstream servers that were
// added, removed or changed are started, stopped or restarted; unchanged
// ones keep running. Settings that shape the process itself (listen, auth
// and profile tokens, audit, ask, telemetry, pinning, logging) take a
// restart: a reload that changes them is refused whole.
type reloader struct {
	path       string
	logger     *slog.Logger
	pool       *upstream.Pool
	srv        *proxy.Server
	headerFunc func(context.Context) map[string]string

	mu      sync.Mutex // one reload at a time
	current *setup
}

func (r *reloader) reload(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.apply(ctx)
	if err != nil {
		r.logger.Error("config reload refused; the running config stays", "config", r.path, "err", err)
	}
	return err
}

func (r *reloader) apply(ctx context.Context) error {
	next, err := loadSetup(r.path)
	if err != nil {
		return err
	}
	if changed := restartOnly(r.current.cfg, next.cfg); len(changed) > 0 {
		return fmt.Errorf("%s changed, which takes a restart of mcpwarden", strings.Join(changed, ", "))
	}
	naming := next.naming()
	if err := r.srv.CheckNaming(naming); err != nil {
		return err
	}
	next.peer = r.current.peer
	added, removed, restarted := r.pool.Reconcile(ctx, next.specs(r.headerFunc))
	r.srv.Reload(ctx, proxy.Reload{
		Policy:          next.policy,
		Naming:          naming,
		SamplingDenied:  next.samplingDenied(),
		ResolveSymlinks: next.resolveSymlinks(),
		Removed:         removed,
	})
	for _, name := range append(added, restarted...) {
		r.srv.UpstreamChanged(ctx, name)
	}
	r.current = next
	r.logger.Info("config reloaded", "config", r.path, "servers_added", added, "servers_removed", removed, "servers_restarted", restarted)
	return nil
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

// watch reloads on SIGHUP and, with watchFile, when the config file
// changes, until ctx ends. It returns when it has stopped.
func (r *reloader) watch(ctx context.Context, watchFile bool) error {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	var changes <-chan fsnotify.Event
	var watchErrs <-chan error
	if watchFile {
		w, err := fsnotify.NewWatcher()
		if err != nil {
			return fmt.Errorf("watching %s: %w", r.path, err)
		}
		defer w.Close()
		// The directory, not the file: editors replace files by renaming.
		if err := w.Add(filepath.Dir(r.path)); err != nil {
			return fmt.Errorf("watching %s: %w", r.path, err)
		}
		changes, watchErrs = w.Events, w.Errors
	}
	abs, _ := filepath.Abs(r.path)
	var debounce <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-hup:
			r.logger.Info("SIGHUP: reloading the config", "config", r.path)
			_ = r.reload(ctx)
		case ev := <-changes:
			if p, _ := filepath.Abs(ev.Name); p == abs && ev.Op&(fsnotify.Write|fsnotify.Create|fsnotify.Rename) != 0 {
				debounce = time.After(300 * time.Millisecond) // let the editor finish writing
			}
		case err := <-watchErrs:
			if !errors.Is(err, fsnotify.ErrEventOverflow) {
				r.logger.Warn("watching the config", "err", err)
			}
		case <-debounce:
			debounce = nil
			r.logger.Info("the config file changed: reloading", "config", r.path)
			_ = r.reload(ctx)
		}
	}
}
