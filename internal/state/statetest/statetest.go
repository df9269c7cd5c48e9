// Package statetest is the conformance suite every state.Store passes:
// the memory store and the Redis store run the same tests, so that the
// proxy behaves the same with one replica and with many.
package statetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// An Opener returns two clients of one fresh shared state, as two
// replicas would hold (the memory store returns the same Store twice). It
// closes them when the test ends.
type Opener func(t *testing.T) (a, b state.Store)

// ttl is the short time to live the expiry tests use; long enough for a
// loaded machine to read the value back before it expires.
const ttl = 300 * time.Millisecond

// Run runs the conformance suite against the stores open returns.
func Run(t *testing.T, open Opener) {
	runCases(t, open, []testCase[state.Store]{
		{"a grant put on one client is found on the other until it expires", grantExpires},
		{"a grant is found only under its exact key", grantExactKey},
		{"putting a grant again restarts its time to live without a copy", grantPutAgain},
		{"revoking a session drops its grants only", grantRevoke},
		{"a token is consumed exactly once by concurrent consumers on two clients", tokenOnce},
		{"a token cannot be issued twice", tokenTwice},
		{"a token expires", tokenExpires},
		{"an answer given on one client wakes the waiter on the other", askWakes},
		{"of concurrent answers on two clients exactly one wins", askAnsweredOnce},
		{"many waiters on many asks each get their own answer", askManyWaiters},
		{"an answer given before the wait is still read", askAnsweredBeforeWait},
		{"withdrawing an answered ask returns the answer", askWithdrawAnswered},
		{"a withdrawn ask cannot be answered", askWithdrawn},
		{"pending asks are listed oldest first until they expire", askPending},
		{"an ask id cannot be published twice", askTwice},
		{"a session record is shared until it has been idle too long", sessionExpires},
		{"a touched session outlives its first idle time", sessionTouch},
		{"an ended session is gone", sessionEnd},
		{"every value must expire", ttlRequired},
	})
}

// A testCase is one conformance test of two clients of an S.
type testCase[S any] struct {
	name string
	test func(t *testing.T, a, b S)
}

// runCases runs each case in parallel on two fresh clients from open.
func runCases[S any](t *testing.T, open func(*testing.T) (S, S), cases []testCase[S]) {
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, b := open(t)
			tt.test(t, a, b)
		})
	}
}

func grant(session, principal, tool, scope string) state.Grant {
	return state.Grant{
		Key:    state.GrantKey{Session: session, Principal: principal, Tool: tool, Rule: "ask mcp:fs:*"},
		Answer: state.AllowSession,
		Scope:  json.RawMessage(scope),
	}
}

func mustFind(t *testing.T, s state.Store, key state.GrantKey) []state.Grant {
	t.Helper()
	gs, err := s.FindGrants(t.Context(), key)
	if err != nil {
		t.Fatalf("FindGrants: %v", err)
	}
	return gs
}

func grantExpires(t *testing.T, a, b state.Store) {
	g := grant("s1", "alice", "mcp:fs:read", `{"kind":"exact","paths":["/srv/a"]}`)
	if err := a.PutGrant(t.Context(), g, ttl); err != nil {
		t.Fatalf("PutGrant: %v", err)
	}
	got := mustFind(t, b, g.Key)
	if len(got) != 1 || got[0].Answer != state.AllowSession || got[0].Key != g.Key {
		t.Fatalf("FindGrants on the other client = %+v, want the grant", got)
	}
	var scope map[string]any
	if err := json.Unmarshal(got[0].Scope, &scope); err != nil || scope["kind"] != "exact" {
		t.Errorf("the scope came back as %s (%v)", got[0].Scope, err)
	}
	testkit.Eventually(t, 5*time.Second, "the grant to expire", func() bool { return len(mustFind(t, b, g.Key)) == 0 })
}

func grantExactKey(t *testing.T, a, b state.Store) {
	g := grant("s1", "alice", "mcp:fs:read", `{"kind":"tool"}`)
	if err := a.PutGrant(t.Context(), g, time.Minute); err != nil {
		t.Fatalf("PutGrant: %v", err)
	}
	others := map[string]state.GrantKey{
		"another principal": {Session: "s1", Principal: "mallory", Tool: g.Key.Tool, Rule: g.Key.Rule},
		"another session":   {Session: "s2", Principal: "alice", Tool: g.Key.Tool, Rule: g.Key.Rule},
		"another tool":      {Session: "s1", Principal: "alice", Tool: "mcp:fs:write", Rule: g.Key.Rule},
		"another rule":      {Session: "s1", Principal: "alice", Tool: g.Key.Tool, Rule: "ask mcp:*"},
	}
	for name, k := range others {
		if got := mustFind(t, b, k); len(got) != 0 {
			t.Errorf("a grant was found for %s: %+v", name, got)
		}
	}
}

func grantPutAgain(t *testing.T, a, b state.Store) {
	g := grant("s1", "alice", "mcp:fs:read", `{"kind":"tool"}`)
	if err := a.PutGrant(t.Context(), g, ttl); err != nil {
		t.Fatalf("PutGrant: %v", err)
	}
	if err := b.PutGrant(t.Context(), g, time.Minute); err != nil {
		t.Fatalf("PutGrant again: %v", err)
	}
	deny := g
	deny.Answer = state.DenySession
	if err := b.PutGrant(t.Context(), deny, time.Minute); err != nil {
		t.Fatalf("PutGrant deny: %v", err)
	}
	time.Sleep(2 * ttl)
	got := mustFind(t, a, g.Key)
	if len(got) != 2 {
		t.Fatalf("after the first time to live, FindGrants = %+v, want the allow (put again) and the deny", got)
	}
}

func grantRevoke(t *testing.T, a, b state.Store) {
	g1 := grant("s1", "alice", "mcp:fs:read", `{"kind":"tool"}`)
	g2 := grant("s2", "alice", "mcp:fs:read", `{"kind":"tool"}`)
	for _, g := range []state.Grant{g1, g2} {
		if err := a.PutGrant(t.Context(), g, time.Minute); err != nil {
			t.Fatalf("PutGrant: %v", err)
		}
	}
	if err := b.RevokeSession(t.Context(), "s1"); err != nil {
		t.Fatalf("RevokeSession: %v", err)
	}
	if got := mustFind(t, a, g1.Key); len(got) != 0 {
		t.Errorf("the revoked session still has %+v", got)
	}
	if got := mustFind(t, a, g2.Key); len(got) != 1 {
		t.Errorf("the other session has %+v, want its grant", got)
	}
}

func tokenOnce(t *testing.T, a, b state.Store) {
	const tokens, consumers = 20, 16
	for i := range tokens {
		tok := fmt.Sprintf("once-%d", i)
		if err := a.IssueToken(t.Context(), tok, json.RawMessage(`{"n":1}`), time.Minute); err != nil {
			t.Fatalf("IssueToken: %v", err)
		}
		var won atomic.Int32
		var wg sync.WaitGroup
		errs := make(chan error, consumers)
		for c := range consumers {
			s := a
			if c%2 == 1 {
				s = b
			}
			wg.Go(func() {
				v, err := s.ConsumeToken(t.Context(), tok)
				switch {
				case err == nil && string(v) == `{"n":1}`:
					won.Add(1)
				case err == nil:
					errs <- fmt.Errorf("consumed value %s", v)
				case !errors.Is(err, state.ErrNotFound):
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("ConsumeToken: %v", err)
		}
		if n := won.Load(); n != 1 {
			t.Fatalf("token %s was consumed %d times, want exactly once", tok, n)
		}
	}
}

func tokenTwice(t *testing.T, a, b state.Store) {
	if err := a.IssueToken(t.Context(), "t", json.RawMessage(`1`), time.Minute); err != nil {
		t.Fatalf("IssueToken: %v", err)
	}
	if err := b.IssueToken(t.Context(), "t", json.RawMessage(`2`), time.Minute); !errors.Is(err, state.ErrExists) {
		t.Fatalf("issuing it again on the other client: %v, want ErrExists", err)
	}
	if v, err := b.ConsumeToken(t.Context(), "t"); err != nil || string(v) != "1" {
		t.Fatalf("ConsumeToken = %s, %v; want the first value", v, err)
	}
}

func tokenExpires(t *testing.T, a, b state.Store) {
	if err := a.IssueToken(t.Context(), "t", json.RawMessage(`1`), ttl); err != nil {
		t.Fatalf("IssueToken: %v", err)
	}
	time.Sleep(2 * ttl)
	if _, err := b.ConsumeToken(t.Context(), "t"); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("consuming an expired token: %v, want ErrNotFound", err)
	}
}

func publish(t *testing.T, s state.Store, id string, at time.Time, life time.Duration) {
	t.Helper()
	a := state.Ask{ID: id, AskedAt: at, Body: json.RawMessage(`{"tool":"mcp:fs:write"}`)}
	if err := s.PublishAsk(t.Context(), a, life); err != nil {
		t.Fatalf("PublishAsk %s: %v", id, err)
	}
}

func askWakes(t *testing.T, a, b state.Store) {
	publish(t, a, "ask1", time.Now(), time.Minute)
	type result struct {
		ans json.RawMessage
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	go func() {
		ans, err := a.WaitAnswer(t.Context(), "ask1")
		done <- result{ans, err, time.Now()}
	}()
	time.Sleep(50 * time.Millisecond) // let the waiter wait
	answered := time.Now()
	if err := b.AnswerAsk(t.Context(), "ask1", json.RawMessage(`{"decision":"allow_once"}`)); err != nil {
		t.Fatalf("AnswerAsk: %v", err)
	}
	select {
	case r := <-done:
		if r.err != nil || string(r.ans) != `{"decision":"allow_once"}` {
			t.Fatalf("WaitAnswer = %s, %v", r.ans, r.err)
		}
		// The suites poll rarely (a minute), so a prompt wake came
		// through the notification, not the poll.
		if d := r.at.Sub(answered); d > 2*time.Second {
			t.Errorf("the waiter woke %s after the answer", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter was not woken by the answer given on the other client")
	}
	if _, ok, err := a.WithdrawAsk(t.Context(), "ask1"); err != nil || !ok {
		t.Errorf("WithdrawAsk after the answer = %v, %v; want the answer", ok, err)
	}
}

func askAnsweredOnce(t *testing.T, a, b state.Store) {
	publish(t, a, "ask1", time.Now(), time.Minute)
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range 16 {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			err := s.AnswerAsk(t.Context(), "ask1", json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)))
			switch {
			case err == nil:
				wins.Add(1)
			case !errors.Is(err, state.ErrNotFound):
				t.Errorf("AnswerAsk: %v", err)
			}
		})
	}
	wg.Wait()
	if n := wins.Load(); n != 1 {
		t.Fatalf("%d answers won, want exactly one", n)
	}
}

func askManyWaiters(t *testing.T, a, b state.Store) {
	const asks, perAsk = 32, 2
	for i := range asks {
		publish(t, a, fmt.Sprintf("ask%d", i), time.Now(), time.Minute)
	}
	var wg sync.WaitGroup
	errs := make(chan error, asks*perAsk)
	for i := range asks {
		for w := range perAsk {
			s := a
			if w == 1 {
				s = b
			}
			wg.Go(func() {
				ans, err := s.WaitAnswer(t.Context(), fmt.Sprintf("ask%d", i))
				if err != nil || string(ans) != fmt.Sprint(i) {
					errs <- fmt.Errorf("waiter of ask%d got %s, %v", i, ans, err)
				}
			})
		}
	}
	time.Sleep(50 * time.Millisecond)
	for i := asks - 1; i >= 0; i-- {
		s := b
		if i%2 == 0 {
			s = a
		}
		if err := s.AnswerAsk(t.Context(), fmt.Sprintf("ask%d", i), json.RawMessage(fmt.Sprint(i))); err != nil {
			t.Fatalf("AnswerAsk ask%d: %v", i, err)
		}
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(20 * time.Second):
		t.Fatal("not every waiter was woken by its answer")
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func askAnsweredBeforeWait(t *testing.T, a, b state.Store) {
	publish(t, a, "ask1", time.Now(), time.Minute)
	if err := b.AnswerAsk(t.Context(), "ask1", json.RawMessage(`"deny"`)); err != nil {
		t.Fatalf("AnswerAsk: %v", err)
	}
	ans, err := a.WaitAnswer(t.Context(), "ask1")
	if err != nil || string(ans) != `"deny"` {
		t.Fatalf("WaitAnswer = %s, %v", ans, err)
	}
}

func askWithdrawAnswered(t *testing.T, a, b state.Store) {
	publish(t, a, "ask1", time.Now(), time.Minute)
	if err := b.AnswerAsk(t.Context(), "ask1", json.RawMessage(`"allow"`)); err != nil {
		t.Fatalf("AnswerAsk: %v", err)
	}
	ans, ok, err := a.WithdrawAsk(t.Context(), "ask1")
	if err != nil || !ok || string(ans) != `"allow"` {
		t.Fatalf("WithdrawAsk = %s, %v, %v; want the answer", ans, ok, err)
	}
	if _, ok, err := a.WithdrawAsk(t.Context(), "ask1"); err != nil || ok {
		t.Fatalf("withdrawing again = %v, %v; want no answer", ok, err)
	}
}

func askWithdrawn(t *testing.T, a, b state.Store) {
	publish(t, a, "ask1", time.Now(), time.Minute)
	if _, ok, err := a.WithdrawAsk(t.Context(), "ask1"); err != nil || ok {
		t.Fatalf("WithdrawAsk = %v, %v; want no answer", ok, err)
	}
	if err := b.AnswerAsk(t.Context(), "ask1", json.RawMessage(`"allow"`)); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("answering a withdrawn ask: %v, want ErrNotFound", err)
	}
	if _, err := b.WaitAnswer(t.Context(), "ask1"); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("waiting for a withdrawn ask: %v, want ErrNotFound", err)
	}
	if got, err := b.PendingAsks(t.Context()); err != nil || len(got) != 0 {
		t.Fatalf("PendingAsks = %+v, %v; want none", got, err)
	}
}

func askPending(t *testing.T, a, b state.Store) {
	base := time.Now().Truncate(time.Millisecond)
	publish(t, a, "late", base.Add(2*time.Second), time.Minute)
	publish(t, b, "early", base, time.Minute)
	publish(t, a, "brief", base.Add(time.Second), ttl)
	got, err := b.PendingAsks(t.Context())
	if err != nil {
		t.Fatalf("PendingAsks: %v", err)
	}
	var ids []string
	for _, x := range got {
		ids = append(ids, x.ID)
	}
	if fmt.Sprint(ids) != "[early brief late]" {
		t.Fatalf("PendingAsks = %v, want [early brief late]", ids)
	}
	if !got[0].AskedAt.Equal(base) || string(got[0].Body) != `{"tool":"mcp:fs:write"}` {
		t.Errorf("the first ask came back as %+v", got[0])
	}
	time.Sleep(2 * ttl)
	got, err = a.PendingAsks(t.Context())
	if err != nil || len(got) != 2 {
		t.Fatalf("after the brief one expired, PendingAsks = %+v, %v; want two", got, err)
	}
}

func askTwice(t *testing.T, a, b state.Store) {
	publish(t, a, "ask1", time.Now(), time.Minute)
	err := b.PublishAsk(t.Context(), state.Ask{ID: "ask1", AskedAt: time.Now()}, time.Minute)
	if !errors.Is(err, state.ErrExists) {
		t.Fatalf("publishing the id again: %v, want ErrExists", err)
	}
}

func session(id string) state.Session {
	return state.Session{
		ID:           id,
		Protocol:     "2025-06-18",
		Capabilities: json.RawMessage(`{"elicitation":{}}`),
		Client:       state.ClientInfo{Name: "claude-code", Version: "2.1"},
		Principal:    "token:alice",
		Profile:      "dev",
	}
}

func sessionExpires(t *testing.T, a, b state.Store) {
	want := session("mcp-session-1")
	if err := a.SaveSession(t.Context(), want, ttl); err != nil {
		t.Fatalf("SaveSession: %v", err)
	}
	got, err := b.LoadSession(t.Context(), want.ID)
	if err != nil {
		t.Fatalf("LoadSession on the other client: %v", err)
	}
	gotJSON, _ := json.Marshal(got)
	wantJSON, _ := json.Marshal(want)
	if string(gotJSON) != string(wantJSON) {
		t.Errorf("LoadSession = %s, want %s", gotJSON, wantJSON)
	}
	testkit.Eventually(t, 5*time.Second, "the idle session to expire", func() bool {
		_, err := b.LoadSession(t.Context(), want.ID)
		return errors.Is(err, state.ErrNotFound)
	})
	if err := a.TouchSession(t.Context(), want.ID, time.Minute); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("touching an expired session: %v, want ErrNotFound", err)
	}
}

func sessionTouch(t *testing.T, a, b state.Store) {
	s := session("mcp-session-1")
	if err := a.SaveSession(t.Context(), s, ttl); err != nil {
		t.Fatalf("SaveSession: %v", err)
	}
	if err := b.TouchSession(t.Context(), s.ID, time.Minute); err != nil {
		t.Fatalf("TouchSession: %v", err)
	}
	time.Sleep(2 * ttl)
	if _, err := a.LoadSession(t.Context(), s.ID); err != nil {
		t.Fatalf("LoadSession after the touch: %v", err)
	}
}

func sessionEnd(t *testing.T, a, b state.Store) {
	s := session("mcp-session-1")
	if err := a.SaveSession(t.Context(), s, time.Minute); err != nil {
		t.Fatalf("SaveSession: %v", err)
	}
	if err := b.EndSession(t.Context(), s.ID); err != nil {
		t.Fatalf("EndSession: %v", err)
	}
	if _, err := a.LoadSession(t.Context(), s.ID); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("loading an ended session: %v, want ErrNotFound", err)
	}
	if err := b.EndSession(t.Context(), s.ID); err != nil {
		t.Fatalf("ending it again: %v", err)
	}
}

func ttlRequired(t *testing.T, a, _ state.Store) {
	ctx := t.Context()
	errs := map[string]error{
		"PutGrant":    a.PutGrant(ctx, grant("s", "p", "t", `{}`), 0),
		"PublishAsk":  a.PublishAsk(ctx, state.Ask{ID: "x"}, 0),
		"IssueToken":  a.IssueToken(ctx, "x", nil, -time.Second),
		"SaveSession": a.SaveSession(ctx, session("x"), 0),
	}
	for name, err := range errs {
		if err == nil {
			t.Errorf("%s without a time to live succeeded", name)
		}
	}
}
