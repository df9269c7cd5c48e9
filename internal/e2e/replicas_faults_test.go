package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// A callRecord is one tools/call of a load: when it started and ended,
// which client made it, and whether it got a successful result.
type callRecord struct {
	client     int
	start, end time.Time
	ok         bool
	err        string
}

// load runs clients, each calling go__read of its own file in a loop,
// until stop is closed, and returns every call made.
func load(t *testing.T, clients []*client.Client, files []string, stop <-chan struct{}) []callRecord {
	t.Helper()
	var (
		mu  sync.Mutex
		all []callRecord
		wg  sync.WaitGroup
	)
	for i, c := range clients {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				rec := callRecord{client: i, start: time.Now()}
				ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
				res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "go__read", Arguments: map[string]any{"path": files[i]}}})
				cancel()
				rec.end = time.Now()
				switch {
				case err != nil:
					rec.err = err.Error()
				case res.IsError:
					rec.err = testkit.Text(res)
				default:
					rec.ok = testkit.Text(res) == fmt.Sprint(i)
					if !rec.ok {
						rec.err = "wrong content: " + testkit.Text(res)
					}
				}
				mu.Lock()
				all = append(all, rec)
				mu.Unlock()
				if !rec.ok {
					time.Sleep(20 * time.Millisecond) // do not spin on a failure
				}
			}
		})
	}
	wg.Wait()
	return all
}

// loadClients connects n legacy (session) clients through the balancer,
// each with a file of its own to read.
func loadClients(t *testing.T, rs *replicaSet, n int) ([]*client.Client, []string) {
	t.Helper()
	clients := make([]*client.Client, n)
	files := make([]string, n)
	for i := range n {
		files[i] = filepath.Join(rs.f.sandbox, fmt.Sprintf("load-%d.txt", i))
		if err := os.WriteFile(files[i], []byte(fmt.Sprint(i)), 0o600); err != nil {
			t.Fatal(err)
		}
		clients[i] = connectLB(t, rs, plainToken, client.WithLegacyProtocolOnly())
	}
	return clients, files
}

func TestReplicaKilledDuringLoadLosesNoSession(t *testing.T) {
	t.Parallel()
	f := replicasFixture(t, "10s")
	rs := startReplicas(t, f, 3)

	// A session grant made before the kill: the ask is settled for the
	// session with mcpwarden approve --session on a replica's page.
	granted := connectLB(t, rs, plainToken, client.WithLegacyProtocolOnly()) // no elicitation
	grantedPath := filepath.Join(f.sandbox, "granted.txt")
	pending := goWriteAsync(t, granted, grantedPath, "before")
	rs.replicas[2].approve(t, pendingAskID(t, readTokenFile(t, rs.replicas[2].tokenFile)), "--session")
	res := result(t, pending)
	grantMade := !res.IsError
	if !grantMade {
		t.Errorf("the write that earns the session grant: %q", testkit.Text(res))
	}

	const n = 64
	clients, files := loadClients(t, rs, n)
	stop := make(chan struct{})
	done := make(chan []callRecord, 1)
	go func() { done <- load(t, clients, files, stop) }()
	time.Sleep(time.Second)
	victim := rs.replicas[1]
	killing := time.Now()
	victim.kill(t)
	killedAt := time.Now() // dead: it got no call started after this
	time.Sleep(2 * time.Second)
	close(stop)
	calls := <-done

	var before, after, overlapping, failedOverlapping int
	recovered := map[int]bool{}
	for _, c := range calls {
		switch {
		case c.end.Before(killing):
			before++
			if !c.ok {
				t.Errorf("client %d: a call before the kill failed: %s", c.client, c.err)
			}
		case c.start.After(killedAt):
			after++
			if !c.ok {
				t.Errorf("client %d: a call started %v after the kill failed: %s", c.client, c.start.Sub(killedAt).Round(time.Millisecond), c.err)
			}
			if c.ok {
				recovered[c.client] = true
			}
		default:
			overlapping++
			if !c.ok {
				failedOverlapping++
				if failedOverlapping <= 3 {
					t.Logf("client %d: a call in flight at the kill failed after %v: %s", c.client, c.end.Sub(c.start).Round(time.Millisecond), c.err)
				}
				if c.end.Sub(c.start) > 10*time.Second {
					t.Errorf("client %d: a call in flight at the kill took %v to fail", c.client, c.end.Sub(c.start))
				}
			}
		}
	}
	t.Logf("%d calls before the kill, %d in flight while it died (%v; %d failed), %d after; %d of %d clients served after it",
		before, overlapping, killedAt.Sub(killing).Round(time.Millisecond), failedOverlapping, after, len(recovered), n)
	if before == 0 || after == 0 {
		t.Fatalf("the load made %d calls before the kill and %d after, want some of each", before, after)
	}
	if len(recovered) != n {
		t.Errorf("%d of %d sessions were served after the kill, want every one (they continue on the other replicas)", len(recovered), n)
	}

	t.Run("no grant is lost", func(t *testing.T) {
		if !grantMade {
			t.Fatal("no session grant was made before the kill, so none can be checked after it")
		}
		// No one answers asks now: a write that is asked times out.
		for i := range 4 {
			if res := goWrite(t, granted, grantedPath, fmt.Sprint("after ", i)); res.IsError {
				t.Errorf("write #%d under the session grant after the kill: %q, want it covered by the grant", i+1, testkit.Text(res))
			}
		}
	})
	if code, _ := victim.ready(t); code != 0 {
		t.Errorf("the killed replica still answers /readyz (%d)", code)
	}
}

func TestRedisRestartedDuringLoadFailsClosedAndRecovers(t *testing.T) {
	t.Parallel()
	f := replicasFixture(t, "10s")
	rs := startReplicas(t, f, 3)
	const n = 16
	clients, files := loadClients(t, rs, n)
	stop := make(chan struct{})
	done := make(chan []callRecord, 1)
	go func() { done <- load(t, clients, files, stop) }()
	time.Sleep(500 * time.Millisecond)

	rs.redis.Kill()
	killedAt := time.Now()
	time.Sleep(1500 * time.Millisecond)
	for _, r := range rs.replicas {
		if code, body := r.ready(t); code != 503 {
			t.Errorf("%s /readyz with Redis away = %d, want 503:\n%s", r.id, code, body)
		}
	}
	askPath := filepath.Join(f.sandbox, "while-away.txt")
	if c, err := client.NewStreamableHttpClient(rs.url()); err == nil {
		// A new session cannot even be made: initialize fails closed.
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		if err := c.Start(ctx); err == nil {
			if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: "2025-11-25", ClientInfo: mcp.Implementation{Name: "late", Version: "1"}}}); err == nil {
				t.Error("a new session was made with the shared state away")
			}
		}
		cancel()
		c.Close()
	}
	restartedAt := time.Now()
	rs.redis.Restart()
	time.Sleep(1500 * time.Millisecond)
	close(stop)
	calls := <-done

	var away, servedAway int
	for _, c := range calls {
		if c.start.After(killedAt.Add(300*time.Millisecond)) && c.end.Before(restartedAt) {
			away++
			if c.ok {
				servedAway++
			}
		}
	}
	t.Logf("%d calls while Redis was away, %d of them served", away, servedAway)
	if away == 0 {
		t.Fatal("no call was made while Redis was away")
	}
	if servedAway != 0 {
		t.Errorf("%d of %d calls were served while the shared state was away, want none (fail closed)", servedAway, away)
	}

	// Redis came back empty: the sessions it held are gone, and a new one
	// works on every replica, asks included. Each replica counted the
	// outage and its answers subscription came back.
	for _, r := range rs.replicas {
		r.waitReady(t)
		testkit.Eventually(t, 10*time.Second, r.id+" to count the outage and the resubscription", func() bool {
			m := r.scrape(t)
			return sumSeries(m, `mcpwarden_state_errors_total{error="unavailable",`) > 0 && m["mcpwarden_state_resubscriptions_total"] >= 1
		})
	}
	c := connectLB(t, rs, plainToken, client.WithLegacyProtocolOnly())
	for i := range 6 {
		if res := callTool(t, c, "go__read", map[string]any{"path": files[0]}); res.IsError {
			t.Errorf("read #%d after Redis came back: %q", i+1, testkit.Text(res))
		}
	}
	pending := goWriteAsync(t, c, askPath, "x")
	rs.replicas[0].approve(t, pendingAskID(t, readTokenFile(t, rs.replicas[0].tokenFile)))
	if res := result(t, pending); res.IsError || !exists(askPath) {
		t.Errorf("an ask allowed once on a page after Redis came back: %q", testkit.Text(res))
	}
}
