package upstream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// stopSettle is how long the supervisor of a stdio server whose child was
// stopped by SIGTERM, SIGINT or SIGHUP waits for the pool to be closed
// before it reports the loss (EventLost) and restarts the server.
const stopSettle = 500 * time.Millisecond

// run is the server's supervisor: it (re)starts the server until the pool
// is closed or Reconcile stops it. startDone is called once the first
// attempt has ended.
func (s *server) run(startCtx context.Context, startDone func()) {
	ctx := s.ctx
	defer func() {
		if startDone != nil {
			startDone()
		}
	}()
	if s.prev != nil { // the old process group is gone before a new one starts
		<-s.prev.done
		s.prev = nil
	}
	failures := 0
	reinit := false // the attempt replaces an expired session
	for {
		dialCtx, cancel := context.WithCancel(ctx)
		stop := func() bool { return false }
		if startDone != nil { // the first attempt is bounded by Start's ctx too
			stop = context.AfterFunc(startCtx, cancel)
		}
		sess, err := dial(dialCtx, s.dialSpec(), s.env.opts.ClientInfo, s.logger, s.env.spawn, s.onNotification, s.clientOptions()...)
		stop()
		cancel()
		if ctx.Err() != nil {
			if sess != nil {
				s.setStopError(sess.stop())
			}
			return
		}
		if err != nil {
			failures++
			delay := s.env.backoff(failures)
			ev := s.setDown(err, failures+1, delay)
			ev.Kind = EventFailed
			s.logger.Warn("upstream failed to start", "failures", failures, "retry_in", delay.Round(time.Millisecond), "err", err)
			s.emit(ev)
			if startDone != nil {
				startDone()
				startDone = nil
			}
			if !sleep(ctx, delay) {
				return
			}
			s.setConnecting()
			continue
		}

		up := time.Now()
		ev := s.setUp(sess)
		if reinit {
			ev.Kind, reinit = EventReinitialized, false
		}
		s.logger.Info("upstream ready", "transport", s.spec.Transport, "protocol", sess.protocol, "upstream", sess.info.Name, "version", sess.info.Version, "tools", len(sess.tools), "event", ev.Kind)
		s.emit(ev)
		if startDone != nil {
			startDone()
			startDone = nil
		}

		s.watch(ctx, sess)
		if sess.proc != nil && sess.proc.signalled() {
			// Whoever stopped the child may be stopping mcpwarden too (a
			// client ending its process tree): give Close a moment, so
			// that a shutdown is not reported as a crash.
			sleep(ctx, stopSettle)
		}
		if ctx.Err() != nil || s.isRetired() { // a draining server is not restarted
			s.setStopError(sess.stop())
			return
		}
		if errors.Is(sess.lostErr, errSessionExpired) && time.Since(up) >= minSessionLife {
			// Not a crash: the upstream forgot the session. Calls wait
			// for the new one (see await).
			s.logger.Info("upstream session expired; initializing a new one", "err", sess.lostErr)
			s.setConnecting()
			s.retireSession(ctx, sess)
			reinit = true
			continue
		}
		if time.Since(up) >= backoffReset {
			failures = 0
		}
		failures++
		delay := s.env.backoff(failures)
		ev = s.setDown(sess.lostErr, failures+1, delay)
		ev.Kind = EventLost
		s.logger.Warn("upstream lost; restarting", "retry_in", delay.Round(time.Millisecond), "err", sess.lostErr)
		s.emit(ev)
		start := time.Now()
		sess.stop() // the old process group is gone before a new one starts
		if !sleep(ctx, delay-time.Since(start)) {
			return
		}
		s.setConnecting()
	}
}

// watch returns when sess is lost or ctx ends, re-listing tools when the
// upstream says they changed and checking the session when a call failed
// in the transport.
func (s *server) watch(ctx context.Context, sess *session) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-sess.lost:
			return
		case <-s.relist:
			s.refreshTools(ctx, sess)
		case <-s.suspect:
			pctx, cancel := context.WithTimeout(ctx, min(s.spec.initTimeout(), 10*time.Second))
			err := sess.client.Ping(pctx)
			cancel()
			if err != nil && ctx.Err() == nil {
				sess.markLost(fmt.Errorf("a call failed in the transport and ping failed: %w", err))
			}
		}
	}
}

// refreshTools re-lists the tools of sess and reports a change.
func (s *server) refreshTools(ctx context.Context, sess *session) {
	lctx, cancel := context.WithTimeout(ctx, s.spec.initTimeout())
	tools, err := sess.listTools(lctx)
	cancel()
	if err != nil {
		if ctx.Err() == nil && !sess.isLost() {
			s.logger.Warn("re-listing tools after tools/list_changed", "err", err)
		}
		return
	}
	s.mu.Lock()
	if s.sess != sess || toolsEqual(s.tools, tools) {
		s.mu.Unlock()
		return
	}
	s.tools = tools
	s.mu.Unlock()
	s.logger.Info("upstream tools changed", "tools", len(tools))
	s.emit(Event{Server: s.name, Kind: EventToolsChanged, Tools: tools, ToolsChanged: true})
}

// onNotification is called by the transport's reader; it must not block.
func (s *server) onNotification(n mcp.JSONRPCNotification) {
	if n.Method == mcp.MethodNotificationToolsListChanged {
		poke(s.relist)
	}
	if p := s.env.peer(); p != nil {
		p.Notify(s.peerContext(context.Background()), s.name, n)
	}
}

func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// isClosed reports whether ch, which is only ever closed, is closed.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// sleep waits d or until ctx ends, reporting whether it waited d.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (s *server) emit(e Event) {
	if s.env.opts.OnEvent != nil && s.instance == "" {
		s.env.opts.OnEvent(e)
	}
}
