package approvals

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/internal/state/memory"
	stateredis "github.com/mcpwarden/mcpwarden/internal/state/redis"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// sharedStores open the stores replicas of the broker share in tests.
var sharedStores = []struct {
	name string
	open func(t *testing.T) state.Store
}{
	{"memory", func(t *testing.T) state.Store {
		s := memory.New()
		t.Cleanup(func() { s.Close() })
		return s
	}},
	{"redis", func(t *testing.T) state.Store {
		r := testkit.StartRedis(t)
		s, err := stateredis.Open(t.Context(), stateredis.Options{URL: r.URL(), Poll: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}},
}

func forEachStore(t *testing.T, test func(t *testing.T, store state.Store)) {
	t.Helper()
	for _, st := range sharedStores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			test(t, st.open(t))
		})
	}
}

// sharedPage serves the page of a broker sharing store, as one replica's.
func sharedPage(t *testing.T, store state.Asks) (*Broker, *httptest.Server) {
	t.Helper()
	b := NewBroker(&BrokerOptions{Shared: store})
	srv := httptest.NewUnstartedServer(nil)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	h, err := NewHandler(b, HandlerOptions{Token: testToken, Hosts: LoopbackHosts(port)})
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = h
	srv.Start()
	t.Cleanup(func() { b.Close(); srv.Close() })
	return b, srv
}

// waitListed waits until c lists ask id.
func waitListed(t *testing.T, c *Client, id string) {
	t.Helper()
	testkit.Eventually(t, 5*time.Second, "ask "+id+" listed on the other replica", func() bool {
		s, err := c.Snapshot(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range s.Pending {
			if p.ID == id {
				return true
			}
		}
		return false
	})
}

func TestAskWaitingOnOneReplicaIsSettledOnAnother(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, store state.Store) {
		a, _ := sharedPage(t, store)
		_, pageB := sharedPage(t, store)
		cliB := &Client{TokenFile: TokenFile{URL: pageB.URL + "/", Token: testToken}}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		got := resolveAsync(ctx, a, Request{ID: "abc123", Tool: "mcp:fs:write_file", Session: "s1"})
		waitListed(t, cliB, "abc123")
		if err := cliB.Decide(t.Context(), "abc123", state.AllowSession, "root"); err != nil {
			t.Fatalf("approving on replica B: %v", err)
		}
		r := <-got
		if r.err != nil || r.d != (Decision{Answer: state.AllowSession, Via: ViaCLI, Who: "root"}) {
			t.Errorf("replica A got %+v, %v; want the answer given on replica B", r.d, r.err)
		}
		// Answered once: a second answer finds nothing.
		if err := cliB.Decide(t.Context(), "abc123", state.Deny, "root"); err == nil {
			t.Error("a second answer to a settled ask was taken")
		}
		s, _, err := a.SnapshotContext(t.Context())
		if err != nil || len(s.Pending) != 0 || len(s.Recent) != 1 || s.Recent[0].Outcome != "allow_session" {
			t.Errorf("replica A's snapshot after the answer: %+v, %v", s, err)
		}
	})
}

func TestConcurrentAnswersOnTwoReplicasSettleOnce(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, store state.Store) {
		a := NewBroker(&BrokerOptions{Shared: store})
		others := []*Broker{NewBroker(&BrokerOptions{Shared: store}), NewBroker(&BrokerOptions{Shared: store})}
		t.Cleanup(func() { a.Close(); others[0].Close(); others[1].Close() })
		got := resolveAsync(t.Context(), a, Request{ID: "race1", Tool: "mcp:fs:write_file"})
		testkit.Eventually(t, 5*time.Second, "the ask listed", func() bool {
			s, _, err := others[0].SnapshotContext(t.Context())
			return err == nil && len(s.Pending) == 1
		})
		answers := []state.Answer{state.AllowOnce, state.Deny}
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i, b := range others {
			wg.Go(func() { errs[i] = b.DecideContext(t.Context(), "race1", answers[i], ViaPage, fmt.Sprint("human", i)) })
		}
		wg.Wait()
		if (errs[0] == nil) == (errs[1] == nil) {
			t.Fatalf("answers: %v and %v; want exactly one taken", errs[0], errs[1])
		}
		for i, err := range errs {
			if err != nil && !errors.Is(err, ErrUnknownAsk) {
				t.Errorf("the losing answer %d: %v, want ErrUnknownAsk", i, err)
			}
		}
		want := answers[0]
		if errs[0] != nil {
			want = answers[1]
		}
		if r := <-got; r.err != nil || r.d.Answer != want {
			t.Errorf("the waiter got %+v, %v; want the answer that was taken (%s)", r.d, r.err, want)
		}
	})
}

func TestSharedAskTimesOutAndIsWithdrawnEverywhere(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, store state.Store) {
		a := NewBroker(&BrokerOptions{Shared: store})
		b := NewBroker(&BrokerOptions{Shared: store})
		t.Cleanup(func() { a.Close(); b.Close() })
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		if _, err := a.Resolve(ctx, Request{ID: "late1", Tool: "mcp:fs:write_file"}); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Resolve past its deadline: %v", err)
		}
		if s, _, err := b.SnapshotContext(t.Context()); err != nil || len(s.Pending) != 0 {
			t.Errorf("the other replica still lists %d asks (%v)", len(s.Pending), err)
		}
		if err := b.DecideContext(t.Context(), "late1", state.AllowOnce, ViaPage, "x"); !errors.Is(err, ErrUnknownAsk) {
			t.Errorf("answering a withdrawn ask: %v, want ErrUnknownAsk", err)
		}
	})
}

func TestSharedStateDownFailsTheAskInsteadOfKeepingItHere(t *testing.T) {
	t.Parallel()
	r := testkit.StartRedis(t)
	store, err := stateredis.Open(t.Context(), stateredis.Options{URL: r.URL()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	b, page := sharedPage(t, store)
	r.Kill()
	if _, err := b.Resolve(t.Context(), Request{ID: "down1", Tool: "mcp:fs:write_file"}); !errors.Is(err, state.ErrUnavailable) {
		t.Errorf("Resolve with redis down: %v, want ErrUnavailable", err)
	}
	if s := b.Pending(); len(s) != 0 {
		t.Errorf("the broker kept %d asks in its own memory", len(s))
	}
	c := &Client{TokenFile: TokenFile{URL: page.URL + "/", Token: testToken}}
	if _, err := c.Snapshot(t.Context()); err == nil {
		t.Error("listing the asks with redis down succeeded")
	}
	if err := c.Decide(t.Context(), "down1", state.AllowOnce, "x"); err == nil {
		t.Error("answering with redis down succeeded")
	}
}

func TestPageCannotAnswerWhatIsNotAnAsk(t *testing.T) {
	t.Parallel()
	store := memory.New()
	t.Cleanup(func() { store.Close() })
	// The proxy waits in the shared state for the client's answer to its
	// request 7 of session s1; the page's token must not forge it.
	if err := store.PublishAsk(t.Context(), state.Ask{ID: "relay:s1:7", AskedAt: time.Now(), Body: []byte(`{"relay":true}`)}, time.Minute); err != nil {
		t.Fatal(err)
	}
	b := NewBroker(&BrokerOptions{Shared: store})
	t.Cleanup(b.Close)
	if err := b.DecideContext(t.Context(), "relay:s1:7", state.AllowOnce, ViaPage, "x"); !errors.Is(err, ErrUnknownAsk) {
		t.Errorf("answering a relay claim through the page: %v, want ErrUnknownAsk", err)
	}
	if s, _, err := b.SnapshotContext(t.Context()); err != nil || len(s.Pending) != 0 {
		t.Errorf("the page lists %d asks (%v), want the relay claim hidden", len(s.Pending), err)
	}
}

func TestEventStreamShowsAnAskMadeOnAnotherReplica(t *testing.T) {
	t.Parallel()
	store := memory.New()
	t.Cleanup(func() { store.Close() })
	a, _ := sharedPage(t, store)
	_, pageB := sharedPage(t, store)
	resp, err := http.Get(pageB.URL + "/api/events?token=" + url.QueryEscape(testToken))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := make(chan Snapshot, 100)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var s Snapshot
				if json.Unmarshal([]byte(data), &s) == nil {
					events <- s
				}
			}
		}
	}()
	resolveAsync(t.Context(), a, Request{ID: "elsewhere", Tool: "mcp:fs:write_file"})
	deadline := time.After(5 * time.Second)
	for {
		select {
		case s, ok := <-events:
			if !ok {
				t.Fatal("the stream ended")
			}
			if len(s.Pending) == 1 && s.Pending[0].ID == "elsewhere" {
				return
			}
		case <-deadline:
			t.Fatal("replica B's event stream never showed the ask waiting on replica A")
		}
	}
}

// TestApprovingAnAskWhoseReplicaDiedSaysNothingRuns: the replica that
// asked is gone (killed with the ask listed), so no one takes the answer
// and nothing runs. `mcpwarden approve` must not report "allowed … once":
// the answer is refused with an error that says so.
func TestApprovingAnAskWhoseReplicaDiedSaysNothingRuns(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, store state.Store) {
		_, pageB := sharedPage(t, store)
		cliB := &Client{TokenFile: TokenFile{URL: pageB.URL + "/", Token: testToken}}
		body, err := json.Marshal(Request{ID: "orphan1", Tool: "mcp:fs:write_file", Session: "s1", AskedAt: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		// What replica A listed before it died; no waiter is left.
		if err := store.PublishAsk(t.Context(), state.Ask{ID: "orphan1", AskedAt: time.Now(), Body: body}, time.Minute); err != nil {
			t.Fatal(err)
		}
		waitListed(t, cliB, "orphan1")
		start := time.Now()
		err = cliB.Decide(t.Context(), "orphan1", state.AllowOnce, "root")
		if !errors.Is(err, ErrAnswerNotTaken) || !strings.Contains(err.Error(), "nothing runs") {
			t.Errorf("approving an ask no replica waits on: %v; want ErrAnswerNotTaken saying nothing runs", err)
		}
		if took := time.Since(start); took > answerTakeWait+2*time.Second {
			t.Errorf("the answer took %s to be refused, want about %s", took, answerTakeWait)
		}
	})
}
