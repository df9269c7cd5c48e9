package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/egress"
	"github.com/mcpwarden/mcpwarden/internal/sandbox"
)

// An egressPeer is a Peer that answers no request and decides egress by an
// allowlist of hosts, each of which it also names the address of; it
// records what it was asked and told.
type egressPeer struct {
	allow []string

	mu       sync.Mutex
	asked    []egressAsk
	reported []egress.Report
}

type egressAsk struct {
	server string
	from   *Route
	req    egress.Request
}

func (p *egressPeer) Notify(context.Context, string, mcp.JSONRPCNotification) {}
func (p *egressPeer) CreateMessage(context.Context, string, mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return nil, ErrNoPeer
}
func (p *egressPeer) Elicit(context.Context, string, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return nil, ErrNoPeer
}
func (p *egressPeer) ListRoots(context.Context, string, mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	return nil, ErrNoPeer
}

func (p *egressPeer) DecideConnect(_ context.Context, server string, from *Route, r egress.Request) egress.Verdict {
	p.mu.Lock()
	p.asked = append(p.asked, egressAsk{server, from, r})
	p.mu.Unlock()
	if slices.Contains(p.allow, r.Host) {
		return egress.Verdict{Decision: egress.Allow}
	}
	return egress.Verdict{Reason: "mcp:" + server + ":network/connect is not allowed for " + r.Host}
}

func (p *egressPeer) ReportConnect(_ string, _ *Route, rep egress.Report) {
	p.mu.Lock()
	p.reported = append(p.reported, rep)
	p.mu.Unlock()
}

func (p *egressPeer) NamesAddress(_, host string, _ netip.Addr, _ uint16) bool {
	return slices.Contains(p.allow, host)
}

var _ EgressPolicy = (*egressPeer)(nil)

// hello is a web server on loopback standing in for a host outside; it
// returns its port.
func hello(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "hello from outside") })}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

// proxiedSpec is the stand-in with its fetch tool, sandboxed with
// network: proxy in tier.
func proxiedSpec(t *testing.T, tier sandbox.Tier) Spec {
	dir := t.TempDir()
	return Spec{Transport: TransportStdio, Command: os.Args[0],
		Env: map[string]string{stdioServerEnv: filepath.Join(dir, "pid"), fetchToolEnv: "1"},
		Sandbox: &Sandbox{Launcher: os.Args[0], Policy: sandbox.Policy{Tier: tier, Network: sandbox.NetworkProxy,
			Home: filepath.Join(dir, "home"), TmpDir: filepath.Join(dir, "tmp")}}}
}

// fetch calls the fetch tool of server s and returns its text, with
// "ERROR " before it when the tool failed.
func fetch(ctx context.Context, t *testing.T, pool *Pool, s string, route *Route, u string) string {
	t.Helper()
	raw, err := pool.Call(ctx, s, route, mcp.CallToolParams{Name: "fetch", Arguments: map[string]any{"url": u}})
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(raw, &res); err != nil || len(res.Content) == 0 {
		t.Fatalf("fetch answered %s (%v)", raw, err)
	}
	if res.IsError {
		return "ERROR " + res.Content[0].Text
	}
	return res.Content[0].Text
}

var proxyTiers = []sandbox.Tier{sandbox.TierNamespaces, sandbox.TierLandlock}

func TestSandboxedServerReachesOnlyWhatItsEgressPolicyAllows(t *testing.T) {
	t.Parallel()
	port := hello(t)
	for _, tier := range proxyTiers {
		t.Run(tier.String(), func(t *testing.T) {
			t.Parallel()
			peer := &egressPeer{allow: []string{"127.0.0.1"}}
			pool := New(map[string]Spec{"s": proxiedSpec(t, tier)}, nil)
			pool.Start(t.Context(), peer)
			defer pool.Close()
			if err := pool.Err("s"); err != nil {
				t.Fatal(err)
			}
			if got := fetch(t.Context(), t, pool, "s", nil, "http://127.0.0.1:"+port+"/"); got != "hello from outside" {
				t.Fatalf("the allowed host: %s", got)
			}
			if got := fetch(t.Context(), t, pool, "s", nil, "http://example.invalid/"); !strings.Contains(got, "403") || !strings.Contains(got, "is not allowed for example.invalid") {
				t.Fatalf("the denied host: %s, want 403 with the policy's reason", got)
			}
			peer.mu.Lock()
			defer peer.mu.Unlock()
			if len(peer.asked) != 2 || peer.asked[0].server != "s" || peer.asked[0].from != nil || peer.asked[1].req.Host != "example.invalid" {
				t.Fatalf("the policy was asked %+v, want 127.0.0.1 then example.invalid for s", peer.asked)
			}
		})
	}
}

// A peer that decides no egress (a caller that only lists and calls) must
// not leave the proxy open: every connection is refused, saying why.
func TestSandboxedServerWithoutAnEgressPolicyReachesNothing(t *testing.T) {
	t.Parallel()
	port := hello(t)
	pool := Start(t.Context(), map[string]Spec{"s": proxiedSpec(t, sandbox.TierLandlock)}, nil)
	defer pool.Close()
	if err := pool.Err("s"); err != nil {
		t.Fatal(err)
	}
	if got := fetch(t.Context(), t, pool, "s", nil, "http://127.0.0.1:"+port+"/"); !strings.Contains(got, "403") || !strings.Contains(got, "no egress policy") {
		t.Fatalf("without an egress policy: %s, want 403 saying there is none", got)
	}
}

// An isolated child's connections are its caller's: the policy is told
// whose, so that an ask reaches that caller and no other.
func TestIsolatedChildsConnectionsAreAttributedToItsCaller(t *testing.T) {
	t.Parallel()
	spec := proxiedSpec(t, sandbox.TierLandlock)
	spec.Isolation = IsolationPerSession
	peer := &egressPeer{}
	pool := New(map[string]Spec{"s": spec}, nil)
	pool.Start(t.Context(), peer)
	defer pool.Close()
	if got := fetch(t.Context(), t, pool, "s", &Route{Principal: "alice", Session: "s1"}, "http://example.invalid/"); !strings.Contains(got, "403") {
		t.Fatalf("fetch: %s, want 403", got)
	}
	peer.mu.Lock()
	defer peer.mu.Unlock()
	if len(peer.asked) != 1 || peer.asked[0].from == nil || peer.asked[0].from.Principal != "alice" || peer.asked[0].from.Session != "s1" {
		t.Fatalf("the policy was asked %+v, want one connection from alice's session s1", peer.asked)
	}
}

// A server's egress proxy lives as long as its process: a restart closes
// the old one (the new process gets its own) and Close closes the last.
func TestEgressProxyEndsWithItsServerProcess(t *testing.T) {
	t.Parallel()
	ports := make(chan uint16, 4)
	pool := New(map[string]Spec{"s": proxiedSpec(t, sandbox.TierLandlock)}, &Options{
		MinBackoff: 10 * time.Millisecond, MaxBackoff: 10 * time.Millisecond,
		OnEvent: func(e Event) {
			if e.Sandbox != nil {
				ports <- e.Sandbox.ProxyPort
			}
		},
	})
	pool.Start(t.Context(), &egressPeer{})
	defer pool.Close()
	listening := func(port uint16) bool {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	}
	first := <-ports
	if first == 0 || !listening(first) {
		t.Fatalf("the egress proxy of the running server is not listening on its port %d", first)
	}
	pid, ok := pool.PID("s")
	if !ok {
		t.Fatal("no process")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var second uint16
	select {
	case second = <-ports:
	case <-time.After(10 * time.Second):
		t.Fatal("the server was not restarted")
	}
	if listening(first) {
		t.Errorf("the egress proxy of the killed process still listens on %d", first)
	}
	if !listening(second) {
		t.Errorf("the restarted process's egress proxy is not listening on %d", second)
	}
	pool.Close()
	if listening(second) {
		t.Errorf("the egress proxy still listens on %d after Close", second)
	}
}
