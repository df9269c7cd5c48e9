package proxy

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/state/redis"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/proxy/naming"
	"github.com/mcpwarden/mcpwarden/rules"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// redisReplicaStore opens a Redis store in a namespace of the test's own on
// srv, as one replica would.
func redisReplicaStore(t *testing.T, srv *testkit.RedisServer) *redis.Store {
	t.Helper()
	ns := strings.NewReplacer(" ", "_", "/", "_").Replace(t.Name())
	s, err := redis.Open(t.Context(), redis.Options{URL: srv.URL(), Namespace: ns, Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// replica is a proxy in front of the stand-in fs (echo) and web (fetch)
// upstreams, keeping its policy state in store, as one replica of many.
func replica(t *testing.T, spec rules.Spec, store *redis.Store, fs, web *testkit.StandIn) (*Server, *memorySink) {
	t.Helper()
	pool := upstream.Start(t.Context(), map[string]upstream.Spec{
		"fs":  {Transport: upstream.TransportHTTP, URL: fs.URL(t)},
		"web": {Transport: upstream.TransportHTTP, URL: web.URL(t)},
	}, nil)
	t.Cleanup(func() { pool.Close() })
	for _, name := range []string{"fs", "web"} {
		if err := pool.Err(name); err != nil {
			t.Fatal(err)
		}
	}
	p, err := rules.Compile(spec)
	if err != nil {
		t.Fatal(err)
	}
	sink := &memorySink{}
	srv, err := New(Options{Upstream: pool, Policy: p, Audit: audit.New(sink, audit.Config{}), State: store})
	if err != nil {
		t.Fatal(err)
	}
	adopt(t, srv)
	return srv, sink
}

func standIns() (fs, web *testkit.StandIn) {
	fs, web = testkit.NewStandIn(), testkit.NewStandIn()
	fs.AddTool(mcp.NewTool("echo", mcp.WithString("text")), testkit.Reply("hi"))
	web.AddTool(mcp.NewTool("fetch", mcp.WithString("url")), testkit.Reply(injectedPage))
	return fs, web
}

// sharedPolicy limits echo and labels fetch untrusted input and echo
// egress, with a flow rule between them.
func sharedPolicy(max int, per string) rules.Spec {
	spec := limitSpec(max, per, "deny")
	spec.Labels = map[string][]string{"untrusted_input": {"mcp:web:fetch"}, "egress": {"mcp:fs:echo"}}
	spec.Flow = []rules.FlowSpec{{After: "untrusted_input", Then: "deny", On: "egress"}}
	return spec
}

func TestCallBeyondALimitIsEscalatedAcrossReplicasSharingRedis(t *testing.T) {
	t.Parallel()
	redisSrv := testkit.StartRedis(t)
	fs, web := standIns()
	a, _ := replica(t, sharedPolicy(2, "principal"), redisReplicaStore(t, redisSrv), fs, web)
	b, sinkB := replica(t, sharedPolicy(2, "principal"), redisReplicaStore(t, redisSrv), fs, web)
	var forwarded, refused atomic.Int32
	echoOutcomes(t, testkit.Connect(t, a.MCP(), ""), 2, &forwarded, &refused)
	echoOutcomes(t, testkit.Connect(t, b.MCP(), ""), 1, &forwarded, &refused)
	if forwarded.Load() != 2 || refused.Load() != 1 {
		t.Errorf("forwarded %d, refused %d; want the third call, on the other replica, refused", forwarded.Load(), refused.Load())
	}
	if log := sinkText(sinkB); !strings.Contains(log, "request 3 in 1m0s per principal") {
		t.Errorf("replica b's audit does not name the count:\n%s", log)
	}
}

func TestCallFloodIsLimitedOverConcurrentSessionsOnTwoReplicas(t *testing.T) {
	t.Parallel()
	redisSrv := testkit.StartRedis(t)
	fs, web := standIns()
	a, _ := replica(t, sharedPolicy(5, "global"), redisReplicaStore(t, redisSrv), fs, web)
	b, _ := replica(t, sharedPolicy(5, "global"), redisReplicaStore(t, redisSrv), fs, web)
	const sessions, calls = 4, 3
	clients := make([]*client.Client, sessions)
	for i := range clients {
		clients[i] = testkit.Connect(t, []*Server{a, b}[i%2].MCP(), "")
	}
	var forwarded, refused atomic.Int32
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() { echoOutcomes(t, c, calls, &forwarded, &refused) })
	}
	wg.Wait()
	if forwarded.Load() != 5 || refused.Load() != sessions*calls-5 {
		t.Errorf("forwarded %d, refused %d; want 5 forwarded in all", forwarded.Load(), refused.Load())
	}
}

func TestLabelArmedOnOneReplicaEscalatesTheSessionOnAnother(t *testing.T) {
	t.Parallel()
	redisSrv := testkit.StartRedis(t)
	fs, web := standIns()
	a, sinkA := replica(t, sharedPolicy(100, "session"), redisReplicaStore(t, redisSrv), fs, web)
	b, _ := replica(t, sharedPolicy(100, "session"), redisReplicaStore(t, redisSrv), fs, web)
	testkit.CallTool(t, testkit.Connect(t, a.MCP(), ""), "web__fetch", map[string]any{"url": "https://x.test/"})
	var fetch audit.Event
	for _, ev := range sinkA.events(t) {
		if ev.Event == audit.KindDecision && ev.Tool == "mcp:web:fetch" {
			fetch = ev
		}
	}
	// The session goes on at replica b (shared sessions route it there):
	// what b reads for it is what a armed.
	snap := b.current()
	c := &call{session: fetch.Session, principal: fetch.Principal, snap: snap, policy: snap.policy, tool: naming.Tool{Canonical: "mcp:fs:echo", Server: "fs", Name: "echo"}}
	c.armed = b.armedFor(t.Context(), c)
	if len(c.armed) != 1 || c.armed[0].Label != "untrusted_input" || c.armed[0].ID != fetch.ID {
		t.Fatalf("replica b reads %+v armed, want untrusted_input armed by %s", c.armed, fetch.ID)
	}
	if v := b.decide(t.Context(), c); v.Decision != rules.Deny || v.Gate != rules.GateFlow || v.ArmedBy != fetch.ID {
		t.Errorf("egress on replica b = %+v, want the flow rule's deny naming the fetch", v)
	}
}

func TestUnreachableSharedStateFailsClosed(t *testing.T) {
	t.Parallel()
	redisSrv := testkit.StartRedis(t)
	fs, web := standIns()
	limited, _ := replica(t, limitSpec(100, "session", "ask"), redisReplicaStore(t, redisSrv), fs, web)
	flowing, _ := replica(t, sharedPolicy(100, "session"), redisReplicaStore(t, redisSrv), fs, web)
	cl, cf := testkit.Connect(t, limited.MCP(), ""), testkit.Connect(t, flowing.MCP(), "")
	redisSrv.Kill()
	tests := []struct {
		name string
		c    *client.Client
		tool string
		want string
	}{
		{"a call that cannot be counted is denied", cl, "fs__echo", "cannot be counted"},
		{"a session whose labels cannot be read is taken to have armed them all", cf, "fs__echo", "armed by (shared state unavailable)"},
		{"a result whose labels cannot be recorded is withheld", cf, "web__fetch", "its result was withheld"},
	}
	for _, tt := range tests {
		res := testkit.CallTool(t, tt.c, tt.tool, map[string]any{"text": "x", "url": "https://x.test/"})
		if got := testkit.Text(res); !res.IsError || !strings.Contains(got, tt.want) || strings.Contains(got, "ignore previous") {
			t.Errorf("%s: got %q, want a refusal with %q", tt.name, got, tt.want)
		}
	}
}
