package redis_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/internal/state/redis"
	"github.com/mcpwarden/mcpwarden/internal/state/statetest"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// open opens a Store on srv in namespace ns and closes it when the test
// ends.
func open(t *testing.T, srv *testkit.RedisServer, o redis.Options) *redis.Store {
	t.Helper()
	o.URL = srv.URL()
	if o.Timeout == 0 {
		o.Timeout = 500 * time.Millisecond
	}
	s, err := redis.Open(t.Context(), o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestConformance runs the shared suite with two clients of one Redis, as
// two replicas; each test gets its own namespace. Waiters poll once a
// minute, so an answer that wakes one in time came through pub/sub.
func TestConformance(t *testing.T) {
	t.Parallel()
	srv := testkit.StartRedis(t)
	statetest.Run(t, func(t *testing.T) (state.Store, state.Store) {
		ns := strings.NewReplacer(" ", "_", "/", "_").Replace(t.Name())
		o := redis.Options{Namespace: ns, Poll: time.Minute}
		return open(t, srv, o), open(t, srv, o)
	})
}

func TestOpenFailsClosedWithoutRedis(t *testing.T) {
	t.Parallel()
	_, err := redis.Open(t.Context(), redis.Options{URL: "redis://" + testkit.FreeAddr(t), Timeout: 300 * time.Millisecond})
	if !errors.Is(err, state.ErrUnavailable) {
		t.Fatalf("Open without a Redis: %v, want ErrUnavailable", err)
	}
}

func TestPasswordIsRequiredAndUsed(t *testing.T) {
	t.Parallel()
	srv := testkit.StartRedis(t, "--requirepass", "s3cret")
	if _, err := redis.Open(t.Context(), redis.Options{URL: srv.URL()}); !errors.Is(err, state.ErrUnavailable) {
		t.Fatalf("Open without the password: %v, want ErrUnavailable", err)
	} else if strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("the error shows the password: %v", err)
	}
	s := open(t, srv, redis.Options{Password: "s3cret"})
	if err := s.IssueToken(t.Context(), "t", json.RawMessage(`1`), time.Minute); err != nil {
		t.Fatalf("IssueToken with the password: %v", err)
	}
}

func TestOpenRefusesABadURL(t *testing.T) {
	t.Parallel()
	if _, err := redis.Open(t.Context(), redis.Options{URL: "http://localhost:6379"}); err == nil {
		t.Fatal("Open accepted an http URL")
	}
	_, err := redis.Open(t.Context(), redis.Options{URL: "redis://:hunter2@redis:port"})
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("Open of a URL that does not parse: %v; want an error that does not show its password", err)
	}
}

// TestRedisKilledFailsClosedAndRecovers kills Redis (SIGKILL) under an
// open store: every operation then fails with ErrUnavailable naming the
// server, none succeeds from a local copy, and after a restart the same
// store works again without being reopened.
func TestRedisKilledFailsClosedAndRecovers(t *testing.T) {
	t.Parallel()
	srv := testkit.StartRedis(t)
	var counts statetest.Counts
	s := open(t, srv, redis.Options{Namespace: "kill", Observer: &counts})
	ctx := t.Context()
	g := state.Grant{Key: state.GrantKey{Session: "s1", Principal: "alice", Tool: "mcp:fs:write"}, Answer: state.AllowSession, Scope: json.RawMessage(`{}`)}
	if err := s.PutGrant(ctx, g, time.Minute); err != nil {
		t.Fatalf("PutGrant: %v", err)
	}
	srv.Kill()

	ops := map[string]func() error{
		"Check":      func() error { return s.Check(ctx) },
		"FindGrants": func() error { _, err := s.FindGrants(ctx, g.Key); return err },
		"PutGrant":   func() error { return s.PutGrant(ctx, g, time.Minute) },
		"IssueToken": func() error { return s.IssueToken(ctx, "t", json.RawMessage(`1`), time.Minute) },
		"ConsumeToken": func() error {
			_, err := s.ConsumeToken(ctx, "t")
			return err
		},
		"PublishAsk":  func() error { return s.PublishAsk(ctx, state.Ask{ID: "a", AskedAt: time.Now()}, time.Minute) },
		"AnswerAsk":   func() error { return s.AnswerAsk(ctx, "a", json.RawMessage(`1`)) },
		"WaitAnswer":  func() error { _, err := s.WaitAnswer(ctx, "a"); return err },
		"PendingAsks": func() error { _, err := s.PendingAsks(ctx); return err },
		"LoadSession": func() error { _, err := s.LoadSession(ctx, "s1"); return err },
		"SaveSession": func() error { return s.SaveSession(ctx, state.Session{ID: "s1"}, time.Minute) },
	}
	for name, op := range ops {
		start := time.Now()
		err := op()
		if !errors.Is(err, state.ErrUnavailable) {
			t.Errorf("%s with Redis killed: %v, want ErrUnavailable", name, err)
			continue
		}
		if !strings.Contains(err.Error(), srv.Addr()) {
			t.Errorf("%s's error does not name the server %s: %v", name, srv.Addr(), err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s took %s to fail", name, d)
		}
	}

	if counts.Errors(state.OpFindGrants) != 1 || counts.Ops(state.OpPutGrant) != 2 || counts.Errors(state.OpPutGrant) != 1 {
		t.Errorf("the observer counted find_grants %d errors, put_grant %d ops and %d errors; want 1, 2, 1",
			counts.Errors(state.OpFindGrants), counts.Ops(state.OpPutGrant), counts.Errors(state.OpPutGrant))
	}

	srv.Restart() // empty: what Redis held is gone, and nothing pretends otherwise
	testkit.Eventually(t, 10*time.Second, "the store to reconnect", func() bool {
		gs, err := s.FindGrants(ctx, g.Key)
		return err == nil && len(gs) == 0
	})
	if err := s.PutGrant(ctx, g, time.Minute); err != nil {
		t.Fatalf("PutGrant after the restart: %v", err)
	}
	testkit.Eventually(t, 10*time.Second, "the observer to hear the answers subscription come back", func() bool {
		return counts.Resubscriptions() >= 1
	})
	if err := s.Check(ctx); err != nil {
		t.Fatalf("Check after the restart: %v", err)
	}
	if gs, err := s.FindGrants(ctx, g.Key); err != nil || len(gs) != 1 {
		t.Fatalf("FindGrants after the restart = %+v, %v", gs, err)
	}
}

// TestAnswerWakesWaiterAfterRedisRestart checks that the pub/sub
// subscription comes back after Redis does: an answer given after the
// restart wakes a waiter on another client long before its poll.
func TestAnswerWakesWaiterAfterRedisRestart(t *testing.T) {
	t.Parallel()
	srv := testkit.StartRedis(t)
	a := open(t, srv, redis.Options{Namespace: "restart", Poll: time.Minute})
	b := open(t, srv, redis.Options{Namespace: "restart", Poll: time.Minute})
	srv.Kill()
	srv.Restart()
	ctx := t.Context()
	testkit.Eventually(t, 10*time.Second, "the store to reconnect", func() bool {
		return a.PublishAsk(ctx, state.Ask{ID: "ask1", AskedAt: time.Now()}, time.Minute) == nil
	})
	done := make(chan error, 1)
	go func() {
		_, err := a.WaitAnswer(ctx, "ask1")
		done <- err
	}()
	// The subscriber reconnects on its own schedule; answer again until it
	// hears (only the first answer can succeed, so publish fresh asks).
	deadline := time.Now().Add(20 * time.Second)
	if err := b.AnswerAsk(ctx, "ask1", json.RawMessage(`"allow_once"`)); err != nil {
		t.Fatalf("AnswerAsk: %v", err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("WaitAnswer: %v", err)
		}
	case <-time.After(time.Until(deadline)):
		t.Fatal("the answer did not wake the waiter after Redis restarted")
	}
}

// TestWaitAnswerFailsClosedWhenRedisDies checks that a waiter does not
// wait out its deadline when Redis dies under it: its next look fails.
func TestWaitAnswerFailsClosedWhenRedisDies(t *testing.T) {
	t.Parallel()
	srv := testkit.StartRedis(t)
	s := open(t, srv, redis.Options{Namespace: "die", Poll: 100 * time.Millisecond})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := s.PublishAsk(ctx, state.Ask{ID: "ask1", AskedAt: time.Now()}, time.Minute); err != nil {
		t.Fatalf("PublishAsk: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.WaitAnswer(ctx, "ask1")
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	srv.Kill()
	select {
	case err := <-done:
		if !errors.Is(err, state.ErrUnavailable) {
			t.Fatalf("WaitAnswer with Redis killed: %v, want ErrUnavailable", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("WaitAnswer kept waiting after Redis died")
	}
}

// TestNamespacesDoNotShareGrantsOrTokens checks that two deployments on
// one Redis cannot use each other's grants or tokens.
func TestNamespacesDoNotShareGrantsOrTokens(t *testing.T) {
	t.Parallel()
	srv := testkit.StartRedis(t)
	prod := open(t, srv, redis.Options{Namespace: "prod"})
	dev := open(t, srv, redis.Options{Namespace: "dev"})
	ctx := t.Context()
	g := state.Grant{Key: state.GrantKey{Session: "s1", Principal: "alice", Tool: "mcp:fs:write"}, Answer: state.AllowSession, Scope: json.RawMessage(`{}`)}
	if err := dev.PutGrant(ctx, g, time.Minute); err != nil {
		t.Fatalf("PutGrant: %v", err)
	}
	if err := dev.IssueToken(ctx, "tok", json.RawMessage(`1`), time.Minute); err != nil {
		t.Fatalf("IssueToken: %v", err)
	}
	if gs, err := prod.FindGrants(ctx, g.Key); err != nil || len(gs) != 0 {
		t.Errorf("prod found dev's grant: %+v, %v", gs, err)
	}
	if _, err := prod.ConsumeToken(ctx, "tok"); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("prod consumed dev's token: %v", err)
	}
}

// TestTokenDoesNotAppearInRedisKeys checks that whoever can list Redis's
// keys learns no single-use token (the keys hold its digest).
func TestTokenDoesNotAppearInRedisKeys(t *testing.T) {
	t.Parallel()
	srv := testkit.StartRedis(t)
	s := open(t, srv, redis.Options{Namespace: "tok"})
	const secret = "s3cr3t-request-state"
	if err := s.IssueToken(t.Context(), secret, json.RawMessage(`1`), time.Minute); err != nil {
		t.Fatalf("IssueToken: %v", err)
	}
	keys := command(t, srv.Addr(), "KEYS *")
	if !strings.Contains(keys, "mcpwarden:tok:token:") {
		t.Fatalf("KEYS * = %q, want the token's key", keys)
	}
	if strings.Contains(keys, secret) {
		t.Fatalf("KEYS * shows the token: %q", keys)
	}
}

// TestEveryKeyExpires checks that nothing the store writes outlives its
// time to live: abandoned sessions, asks and tokens cannot pile up in a
// shared Redis.
func TestEveryKeyExpires(t *testing.T) {
	t.Parallel()
	srv := testkit.StartRedis(t)
	s := open(t, srv, redis.Options{Namespace: "exp"})
	ctx := t.Context()
	g := state.Grant{Key: state.GrantKey{Session: "s1", Principal: "alice", Tool: "mcp:fs:write"}, Answer: state.AllowSession, Scope: json.RawMessage(`{}`)}
	steps := []error{
		s.PutGrant(ctx, g, time.Minute),
		s.IssueToken(ctx, "tok", json.RawMessage(`1`), time.Minute),
		s.PublishAsk(ctx, state.Ask{ID: "pending", AskedAt: time.Now()}, time.Minute),
		s.PublishAsk(ctx, state.Ask{ID: "answered", AskedAt: time.Now()}, time.Minute),
		s.AnswerAsk(ctx, "answered", json.RawMessage(`"deny"`)),
		s.SaveSession(ctx, state.Session{ID: "s1"}, time.Minute),
	}
	for i, err := range steps {
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	keys := strings.Fields(command(t, srv.Addr(), "KEYS mcpwarden:*"))
	var n int
	for _, k := range keys {
		if !strings.HasPrefix(k, "mcpwarden:") {
			continue // RESP framing
		}
		n++
		ttl := strings.TrimSpace(command(t, srv.Addr(), "PTTL "+k))
		if !strings.HasPrefix(ttl, ":") || strings.HasPrefix(ttl, ":-") {
			t.Errorf("key %s has PTTL %q, want a positive time to live", k, ttl)
		}
	}
	if n != 6 { // grants, token, ask, asks, answer, session
		t.Errorf("found %d keys, want 6: %q", n, keys)
	}
}

// command sends one inline command to the Redis at addr and returns what
// it read back within a short while.
func command(t *testing.T, addr, cmd string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatalf("dialing redis: %v", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := c.Write([]byte(cmd + "\r\n")); err != nil {
		t.Fatalf("writing %q: %v", cmd, err)
	}
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}

func TestCloseEndsWaitAndRefusesCalls(t *testing.T) {
	t.Parallel()
	srv := testkit.StartRedis(t)
	s := open(t, srv, redis.Options{Namespace: "close", Poll: time.Minute})
	if err := s.PublishAsk(t.Context(), state.Ask{ID: "a", AskedAt: time.Now()}, time.Minute); err != nil {
		t.Fatalf("PublishAsk: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.WaitAnswer(t.Context(), "a")
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, state.ErrClosed) {
			t.Errorf("WaitAnswer across Close: %v, want ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end WaitAnswer")
	}
	if err := s.Check(t.Context()); !errors.Is(err, state.ErrClosed) {
		t.Errorf("Check after Close: %v, want ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close again: %v", err)
	}
}
