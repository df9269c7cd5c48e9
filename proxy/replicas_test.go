package proxy

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/internal/state/memory"
	stateredis "github.com/mcpwarden/mcpwarden/internal/state/redis"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/proxy/streamable"
	"github.com/mcpwarden/mcpwarden/rules"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// A sharedStore is a kind of state.Store that replicas share in tests.
type sharedStore struct {
	name string
	open func(t *testing.T) state.Store
}

// sharedStores are the stores replica tests run against: memory, and
// Redis on a redis-server of the test's own (a missing redis-server fails
// the test).
var sharedStores = []sharedStore{
	{"memory", func(t *testing.T) state.Store {
		s := memory.New()
		t.Cleanup(func() { s.Close() })
		return s
	}},
	{"redis", func(t *testing.T) state.Store {
		return openRedisStore(t, testkit.StartRedis(t))
	}},
}

func openRedisStore(t *testing.T, r *testkit.RedisServer) state.Store {
	t.Helper()
	s, err := stateredis.Open(t.Context(), stateredis.Options{URL: r.URL(), Poll: 50e6})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// forEachStore runs test against each shared store, in parallel.
func forEachStore(t *testing.T, test func(t *testing.T, store state.Store)) {
	t.Helper()
	for _, st := range sharedStores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			test(t, st.open(t))
		})
	}
}

// A replicaSet is several proxies sharing one state store and one
// upstream stand-in, each with its own upstream pool and HTTP listener,
// as replicas behind a load balancer are.
type replicaSet struct {
	rec   *testkit.StandIn
	srvs  []*Server
	ts    []*httptest.Server
	sinks []*memorySink
}

// newReplicas starts n replicas sharing store, each deciding with policy;
// edit, when set, adjusts each one's Options.
func newReplicas(t *testing.T, n int, store state.Store, policy rules.PolicySpec, ho streamable.Options, edit func(*Options)) *replicaSet {
	t.Helper()
	rec := testkit.NewStandIn()
	rec.AddTool(mcp.NewTool("echo", mcp.WithString("text")), testkit.Echo)
	rec.AddTool(mcp.NewTool("write", mcp.WithString("path")), testkit.Reply("written"))
	u := rec.URL(t)
	p, err := rules.Compile(rules.Spec{Global: policy, Servers: map[string]rules.ServerSpec{"up": {}}})
	if err != nil {
		t.Fatal(err)
	}
	rs := &replicaSet{rec: rec}
	for range n {
		pool := upstream.Start(t.Context(), map[string]upstream.Spec{"up": {Transport: upstream.TransportHTTP, URL: u}}, nil)
		t.Cleanup(func() { pool.Close() })
		if err := pool.Err("up"); err != nil {
			t.Fatal(err)
		}
		sink := &memorySink{}
		o := Options{Upstream: pool, Policy: p, Audit: audit.New(sink, audit.Config{}), State: store}
		if edit != nil {
			edit(&o)
		}
		srv, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		adopt(t, srv)
		h, sessions, err := streamable.NewHandler(httpHost(srv), "127.0.0.1:0", ho)
		if err != nil {
			t.Fatal(err)
		}
		// The idle reaper runs as ListenAndServe runs it, until the test ends.
		reaped := make(chan struct{})
		go func() { defer close(reaped); sessions.Reap(t.Context()) }()
		t.Cleanup(func() { <-reaped })
		ts := httptest.NewServer(h)
		t.Cleanup(ts.Close)
		rs.srvs = append(rs.srvs, srv)
		rs.ts = append(rs.ts, ts)
		rs.sinks = append(rs.sinks, sink)
	}
	return rs
}

// A balancer sends each request to the replica its target names, as a
// load balancer without session affinity may.
type balancer struct {
	hosts  []string
	target atomic.Int32
	// roundRobin, when set, moves the target on after every request.
	roundRobin bool
	sent       []atomic.Int32 // requests sent to each replica
}

func newBalancer(rs *replicaSet) *balancer {
	b := &balancer{sent: make([]atomic.Int32, len(rs.ts))}
	for _, ts := range rs.ts {
		u, _ := url.Parse(ts.URL)
		b.hosts = append(b.hosts, u.Host)
	}
	return b
}

func (b *balancer) RoundTrip(r *http.Request) (*http.Response, error) {
	i := int(b.target.Load())
	if b.roundRobin {
		b.target.Store(int32((i + 1) % len(b.hosts)))
	}
	b.sent[i].Add(1)
	r = r.Clone(r.Context())
	r.URL.Host = b.hosts[i]
	r.Host = b.hosts[i]
	return http.DefaultTransport.RoundTrip(r)
}

// to sends the following requests to replica i.
func (b *balancer) to(i int) { b.target.Store(int32(i)) }

// client returns an MCP client whose requests go through b, initialized
// (on the replica b targets now) as client "unit" on protocol 2025-11-25,
// which has sessions.
func (b *balancer) client(t *testing.T, opts ...client.ClientOption) *client.Client {
	t.Helper()
	return b.clientOn(t, "2025-11-25", opts...)
}

// clientOn is client on protocol version ("" for the latest).
func (b *balancer) clientOn(t *testing.T, version string, opts ...client.ClientOption) *client.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP("http://replicas"+streamable.EndpointPath, transport.WithHTTPBasicClient(&http.Client{Transport: b}))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, opts...)
	testkit.Initialize(t, c, version)
	return c
}
