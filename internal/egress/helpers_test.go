package egress

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// A testResolver maps names (looked up rooted, "name.") to addresses; a
// name with several answers gives the next one on each lookup, the last
// one from then on. It counts lookups.
type testResolver struct {
	mu      sync.Mutex
	answers map[string][][]netip.Addr
	lookups map[string]int
}

func newResolver(m map[string][]string) *testResolver {
	r := &testResolver{answers: map[string][][]netip.Addr{}, lookups: map[string]int{}}
	for name, addrs := range m {
		var as []netip.Addr
		for _, a := range addrs {
			as = append(as, netip.MustParseAddr(a))
		}
		r.answers[name] = [][]netip.Addr{as}
	}
	return r
}

// answerInTurn makes name answer each of seq in turn.
func (r *testResolver) answerInTurn(name string, seq ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answers[name] = nil
	for _, a := range seq {
		r.answers[name] = append(r.answers[name], []netip.Addr{netip.MustParseAddr(a)})
	}
}

func (r *testResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if network != "ip" || !strings.HasSuffix(host, ".") {
		return nil, errors.New("test resolver: want network ip and a rooted name, got " + network + " " + host)
	}
	name := strings.TrimSuffix(host, ".")
	n := r.lookups[name]
	r.lookups[name]++
	seq := r.answers[name]
	if len(seq) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: name, IsNotFound: true}
	}
	return seq[min(n, len(seq)-1)], nil
}

func (r *testResolver) count(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lookups[name]
}

// named returns a NamesAddress that names exactly addrs.
func named(addrs ...string) func(string, netip.Addr, uint16) bool {
	set := map[netip.Addr]bool{}
	for _, a := range addrs {
		set[netip.MustParseAddr(a)] = true
	}
	return func(_ string, a netip.Addr, _ uint16) bool { return set[a] }
}

// allowAll allows every connection and records what it was asked.
type allowAll struct {
	mu   sync.Mutex
	seen []Request
}

func (a *allowAll) Decide(_ context.Context, r Request) Verdict {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seen = append(a.seen, r)
	return Verdict{Decision: Allow}
}

func (a *allowAll) requests() []Request {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Request(nil), a.seen...)
}

// reports collects a proxy's reports.
type reports struct {
	mu  sync.Mutex
	all []Report
}

func (r *reports) add(rep Report) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all = append(r.all, rep)
}

// wait returns the reports once there are n of them.
func (r *reports) wait(t *testing.T, n int) []Report {
	t.Helper()
	return r.waitWhere(t, n, func(Report) bool { return true })
}

// waitWhere returns the reports keep keeps once there are n of them.
func (r *reports) waitWhere(t *testing.T, n int, keep func(Report) bool) []Report {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.mu.Lock()
		var got []Report
		for _, rep := range r.all {
			if keep(rep) {
				got = append(got, rep)
			}
		}
		r.mu.Unlock()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("got %d reports, want %d: %+v", len(got), n, got)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// startProxy serves a Proxy on a loopback port until the test ends; opts'
// Report is set to collect reports.
func startProxy(t testing.TB, d Decider, opts Options) (addr string, p *Proxy, reps *reports) {
	t.Helper()
	reps = &reports{}
	opts.Report = reps.add
	p = New(d, &opts)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- p.Serve(context.WithoutCancel(t.Context()), l) }()
	t.Cleanup(func() {
		_ = p.Close()
		if err := <-served; !errors.Is(err, ErrClosed) {
			t.Errorf("Serve = %v, want ErrClosed", err)
		}
	})
	return l.Addr().String(), p, reps
}

// outsideListener listens on ip (a loopback address standing for an
// outside host) on a free port.
func outsideListener(t testing.TB, ip string) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// outsideHTTP serves h on ip and returns its port.
func outsideHTTP(t testing.TB, ip string, h http.Handler) uint16 {
	t.Helper()
	l := outsideListener(t, ip)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return uint16(l.Addr().(*net.TCPAddr).Port)
}

// countingOutside listens on ip, accepts and closes every connection,
// counting them.
func countingOutside(t testing.TB, ip string) *countingListener {
	t.Helper()
	l := &countingListener{Listener: outsideListener(t, ip)}
	testkit.ServeConns(t, l, func(net.Conn) {})
	return l
}

// countingListener counts the connections accepted.
type countingListener struct {
	net.Listener
	mu sync.Mutex
	n  int
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.mu.Lock()
		l.n++
		l.mu.Unlock()
	}
	return c, err
}

func (l *countingListener) accepted() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// rawRequest sends head to the proxy on a new connection and returns the
// proxy's response (its body read) and the connection, still open.
func rawRequest(t *testing.T, proxy, head string) (*http.Response, string, net.Conn) {
	t.Helper()
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: strings.Fields(head + " x")[0]})
	if err != nil {
		t.Fatalf("reading the proxy's answer to %q: %v", head, err)
	}
	body := ""
	if resp.StatusCode != http.StatusOK || resp.Request.Method != http.MethodConnect {
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
	}
	_ = c.SetDeadline(time.Time{})
	return resp, body, &bufConn{Conn: c, r: br}
}

// A bufConn reads through the reader that read the proxy's answer.
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// portOf returns the port of a listener's address.
func portOf(l net.Listener) uint16 { return uint16(l.Addr().(*net.TCPAddr).Port) }
