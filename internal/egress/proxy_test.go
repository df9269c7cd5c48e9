package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// proxyClient returns an HTTP client that goes through the proxy at addr,
// sending proxy credentials, trusting tlsSrv's certificate when set.
func proxyClient(addr string, tlsSrv *httptest.Server) *http.Client {
	tr := &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: addr, User: url.UserPassword("proxyuser", "proxysecret")})}
	if tlsSrv != nil {
		tr.TLSClientConfig = tlsSrv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func TestAllowedHostWorksThroughConnectWithTLS(t *testing.T) {
	t.Parallel()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s over TLS", r.Host)
	}))
	srv.Listener = outsideListener(t, "127.0.0.2")
	srv.StartTLS()
	t.Cleanup(srv.Close)
	port := portOf(srv.Listener)
	res := newResolver(map[string][]string{"example.com": {"127.0.0.2"}})
	d := &allowAll{}
	proxy, _, reps := startProxy(t, d, Options{Resolver: res, NamesAddress: named("127.0.0.2"), TLSPorts: []uint16{port}})

	client := proxyClient(proxy, srv)
	resp, err := client.Get(fmt.Sprintf("https://Example.COM:%d/x", port))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	client.CloseIdleConnections() // ends the tunnel, which reports it
	if want := fmt.Sprintf("hello example.com:%d over TLS", port); !strings.EqualFold(string(body), want) {
		t.Errorf("body %q, want %q", body, want)
	}
	got := reps.wait(t, 1)[0]
	if got.Kind != KindTunnel || got.Outcome != Carried || got.Request != (Request{"example.com", port}) ||
		got.Addr != netip.AddrPortFrom(netip.MustParseAddr("127.0.0.2"), port) || got.Sent == 0 || got.Received == 0 {
		t.Errorf("report %+v", got)
	}
	if r := d.requests(); len(r) != 1 || r[0] != (Request{"example.com", port}) {
		t.Errorf("decider asked %v", r)
	}
}

func TestAllowedHostWorksThroughAbsoluteFormHTTP(t *testing.T) {
	t.Parallel()
	type seen struct {
		host, uri, body string
		header          http.Header
	}
	got := make(chan seen, 1)
	port := outsideHTTP(t, "127.0.0.2", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Host, r.RequestURI, string(b), r.Header}
		w.Header().Set("Keep-Alive", "timeout=5")
		io.WriteString(w, "fetched")
	}))
	res := newResolver(map[string][]string{"allowed.test": {"127.0.0.2"}})
	proxy, _, reps := startProxy(t, &allowAll{}, Options{Resolver: res, NamesAddress: named("127.0.0.2")})

	resp, err := proxyClient(proxy, nil).Post(fmt.Sprintf("http://allowed.test:%d/p/a?q=1", port), "text/plain", strings.NewReader("payload"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "fetched" || resp.Header.Get("Keep-Alive") != "" {
		t.Errorf("body %q, headers %v", body, resp.Header)
	}
	s := <-got
	if want := fmt.Sprintf("allowed.test:%d", port); s.host != want || s.uri != "/p/a?q=1" || s.body != "payload" {
		t.Errorf("upstream saw Host %q, target %q, body %q", s.host, s.uri, s.body)
	}
	rep := reps.wait(t, 1)[0]
	if rep.Kind != KindForward || rep.Outcome != Carried || rep.Err != nil || rep.Sent == 0 || rep.Received == 0 {
		t.Errorf("report %+v", rep)
	}
}

func TestProxyAuthorizationIsNeverForwarded(t *testing.T) {
	t.Parallel()
	got := make(chan http.Header, 1)
	port := outsideHTTP(t, "127.0.0.2", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got <- r.Header }))
	res := newResolver(map[string][]string{"allowed.test": {"127.0.0.2"}})
	proxy, _, _ := startProxy(t, &allowAll{}, Options{Resolver: res, NamesAddress: named("127.0.0.2")})
	head := fmt.Sprintf("GET http://allowed.test:%d/ HTTP/1.1\r\nHost: allowed.test\r\nProxy-Authorization: Basic c2VjcmV0\r\n"+
		"Proxy-Connection: keep-alive\r\nConnection: X-Secret, keep-alive\r\nX-Secret: hop\r\nAuthorization: Bearer end-to-end\r\n\r\n", port)
	resp, _, _ := rawRequest(t, proxy, head)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	h := <-got
	for _, name := range []string{"Proxy-Authorization", "Proxy-Connection", "X-Secret"} {
		if v := h.Values(name); len(v) > 0 {
			t.Errorf("upstream got %s: %q", name, v)
		}
	}
	if h.Get("Authorization") != "Bearer end-to-end" {
		t.Errorf("upstream lost the end-to-end Authorization: %v", h)
	}
}

func TestHostHeaderCannotRedirectAForwardedRequest(t *testing.T) {
	t.Parallel()
	got := make(chan string, 1)
	port := outsideHTTP(t, "127.0.0.2", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got <- r.Host }))
	res := newResolver(map[string][]string{"allowed.test": {"127.0.0.2"}, "evil.test": {"127.0.0.2"}})
	d := &allowAll{}
	proxy, _, _ := startProxy(t, d, Options{Resolver: res, NamesAddress: named("127.0.0.2")})
	// A fronted host on the same address, named in the Host header only.
	resp, body, _ := rawRequest(t, proxy, fmt.Sprintf("GET http://allowed.test:%d/ HTTP/1.1\r\nHost: evil.test\r\n\r\n", port))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if h, want := <-got, fmt.Sprintf("allowed.test:%d", port); h != want {
		t.Errorf("upstream saw Host %q, want %q (the host decided)", h, want)
	}
	if r := d.requests(); len(r) != 1 || r[0].Host != "allowed.test" {
		t.Errorf("decided %v", r)
	}
}

func TestDeniedHostIsRefusedAndReported(t *testing.T) {
	t.Parallel()
	l := countingOutside(t, "127.0.0.2")
	res := newResolver(map[string][]string{"denied.test": {"127.0.0.2"}})
	deny := DeciderFunc(func(context.Context, Request) Verdict {
		return Verdict{Reason: `rule deny mcp:fetch:network/connect host="denied.test"`}
	})
	proxy, _, reps := startProxy(t, deny, Options{Resolver: res, NamesAddress: named("127.0.0.2")})
	for _, head := range []string{
		fmt.Sprintf("CONNECT denied.test:%d HTTP/1.1\r\nHost: denied.test\r\n\r\n", portOf(l)),
		fmt.Sprintf("GET http://denied.test:%d/ HTTP/1.1\r\nHost: denied.test\r\n\r\n", portOf(l)),
	} {
		resp, body, _ := rawRequest(t, proxy, head)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, `host="denied.test"`) {
			t.Errorf("%q: status %d, body %q; want 403 naming the rule", head, resp.StatusCode, body)
		}
	}
	for _, rep := range reps.wait(t, 2) {
		if rep.Outcome != Refused || rep.Verdict.Decision != Refuse || rep.Addr.IsValid() || rep.Request.Host != "denied.test" {
			t.Errorf("report %+v", rep)
		}
	}
	if n := l.accepted(); n != 0 {
		t.Errorf("the denied host was connected to %d times", n)
	}
}

func TestDeniedNameIsNeverLookedUp(t *testing.T) {
	t.Parallel()
	// A name can carry data out through DNS (secret.attacker.example):
	// the proxy must not look up a name it has not been allowed to reach.
	res := newResolver(map[string][]string{"c2vjcmv0.attacker.test": {"127.0.0.2"}})
	proxy, _, reps := startProxy(t, DeciderFunc(func(context.Context, Request) Verdict { return Verdict{} }), Options{Resolver: res})
	resp, _, _ := rawRequest(t, proxy, "CONNECT c2vjcmv0.attacker.test:443 HTTP/1.1\r\n\r\n")
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("status %d, want 403", resp.StatusCode)
	}
	reps.wait(t, 1)
	if n := res.count("c2vjcmv0.attacker.test"); n != 0 {
		t.Errorf("the refused name was looked up %d times", n)
	}
}

func TestNilDeciderRefusesEverything(t *testing.T) {
	t.Parallel()
	proxy, _, reps := startProxy(t, nil, Options{Resolver: newResolver(nil)})
	resp, _, _ := rawRequest(t, proxy, "CONNECT example.com:443 HTTP/1.1\r\n\r\n")
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("status %d, want 403", resp.StatusCode)
	}
	if rep := reps.wait(t, 1)[0]; rep.Outcome != Refused {
		t.Errorf("report %+v", rep)
	}
}

// refusedAddress asks for head through a proxy that allows every
// connection and checks that the address is refused with 403 and
// reported as class want, and that nothing listening on 127.0.0.1 was
// reached.
func refusedAddress(t *testing.T, proxy string, reps *reports, head string, want AddrClass) {
	t.Helper()
	n := len(reps.wait(t, 0))
	resp, body, _ := rawRequest(t, proxy, head)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, want.String()) {
		t.Errorf("%q: status %d, body %q; want 403 naming a %s address", head, resp.StatusCode, body, want)
	}
	rep := reps.wait(t, n+1)[n]
	var ae *AddressError
	if rep.Outcome != AddressRefused || !errors.As(rep.Err, &ae) || ae.Class != want || rep.Addr.IsValid() {
		t.Errorf("%q: report %+v", head, rep)
	}
}

func TestNameResolvingToLoopbackIsRefused(t *testing.T) {
	t.Parallel()
	l := countingOutside(t, "127.0.0.1")
	port := portOf(l)
	tests := []struct{ name, answer string }{
		{"an IPv4 loopback answer", "127.0.0.1"},
		{"an IPv6 loopback answer", "::1"},
		{"an IPv4-mapped loopback answer", "::ffff:127.0.0.1"},
		{"a NAT64 loopback answer", "64:ff9b::7f00:1"},
		{"a 6to4 loopback answer", "2002:7f00:1::1"},
		{"an unspecified answer", "0.0.0.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := newResolver(map[string][]string{"innocent.test": {tt.answer}})
			proxy, _, reps := startProxy(t, &allowAll{}, Options{Resolver: res, TLSPorts: []uint16{}})
			want := ClassLoopback
			if tt.answer == "0.0.0.0" {
				want = ClassUnspecified
			}
			refusedAddress(t, proxy, reps, fmt.Sprintf("CONNECT innocent.test:%d HTTP/1.1\r\n\r\n", port), want)
		})
	}
	t.Cleanup(func() {
		if n := l.accepted(); n != 0 {
			t.Errorf("loopback was reached %d times", n)
		}
	})
}

func TestMetadataAddressIsRefused(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, head, answer string }{
		{"a name resolving to the metadata address", "CONNECT metadata.test:80 HTTP/1.1\r\n\r\n", "169.254.169.254"},
		{"a forwarded request to a name resolving to it", "GET http://metadata.test/latest/meta-data/ HTTP/1.1\r\n\r\n", "169.254.169.254"},
		{"the metadata address itself", "GET http://169.254.169.254/latest/ HTTP/1.1\r\n\r\n", ""},
		{"its decimal spelling", "CONNECT 2852039166:80 HTTP/1.1\r\n\r\n", ""},
		{"its short spelling", "CONNECT 169.254.43518:80 HTTP/1.1\r\n\r\n", ""},
		{"AWS's IPv6 metadata address", "CONNECT [fd00:ec2::254]:80 HTTP/1.1\r\n\r\n", ""},
		{"Alibaba's metadata address", "CONNECT 100.100.100.200:80 HTTP/1.1\r\n\r\n", ""},
		{"Azure's platform address", "CONNECT 168.63.129.16:80 HTTP/1.1\r\n\r\n", ""},
		{"a name resolving to Oracle's", "CONNECT metadata.test:80 HTTP/1.1\r\n\r\n", "192.0.0.192"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := newResolver(nil)
			if tt.answer != "" {
				res = newResolver(map[string][]string{"metadata.test": {tt.answer}})
			}
			proxy, _, reps := startProxy(t, &allowAll{}, Options{Resolver: res})
			refusedAddress(t, proxy, reps, tt.head, ClassMetadata)
		})
	}
}

func TestOctalAndHexSpellingsOfLoopbackAreRefused(t *testing.T) {
	t.Parallel()
	l := countingOutside(t, "127.0.0.1")
	port := portOf(l)
	for _, host := range []string{
		"127.0.0.1", "0177.0.0.1", "0x7f.0.0.1", "0x7F.1", "127.1", "2130706433", "0x7f000001", "017700000001",
		"0177.0.0.01", "127.0.0.1.", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[::1]", "[0:0:0:0:0:0:0:1]", "127.000.000.001",
		"LOCALHOST",
	} {
		t.Run(host, func(t *testing.T) {
			t.Parallel()
			d := &allowAll{}
			res := newResolver(map[string][]string{"localhost": {"127.0.0.1"}})
			proxy, _, reps := startProxy(t, d, Options{Resolver: res})
			for _, head := range []string{
				fmt.Sprintf("CONNECT %s:%d HTTP/1.1\r\n\r\n", host, port),
				fmt.Sprintf("GET http://%s:%d/ HTTP/1.1\r\n\r\n", host, port),
			} {
				resp, _, _ := rawRequest(t, proxy, head)
				if resp.StatusCode != http.StatusForbidden {
					t.Errorf("%q: status %d, want 403", head, resp.StatusCode)
				}
			}
			for _, r := range d.requests() {
				if want := "127.0.0.1"; r.Host != want && r.Host != "::1" && r.Host != "localhost" {
					t.Errorf("decided host %q, want %s: every spelling is decided as the dotted quad", r.Host, want)
				}
			}
			for _, rep := range reps.wait(t, 2) {
				if rep.Outcome != AddressRefused {
					t.Errorf("report %+v", rep)
				}
			}
		})
	}
	t.Cleanup(func() {
		if n := l.accepted(); n != 0 {
			t.Errorf("loopback was reached %d times", n)
		}
	})
}

func TestNameMixingNamedAndLoopbackAddressesIsRefused(t *testing.T) {
	t.Parallel()
	l := countingOutside(t, "127.0.0.2")
	res := newResolver(map[string][]string{"mixed.test": {"127.0.0.2", "127.0.0.1"}})
	proxy, _, reps := startProxy(t, &allowAll{}, Options{Resolver: res, NamesAddress: named("127.0.0.2"), TLSPorts: []uint16{}})
	refusedAddress(t, proxy, reps, fmt.Sprintf("CONNECT mixed.test:%d HTTP/1.1\r\n\r\n", portOf(l)), ClassLoopback)
	if n := l.accepted(); n != 0 {
		t.Errorf("a name with a refused address was still dialled %d times", n)
	}
}

func TestDNSRebindingDialsTheCheckedAddress(t *testing.T) {
	t.Parallel()
	good := outsideHTTP(t, "127.0.0.2", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "public") }))
	// The same port on 127.0.0.3 stands for an internal service the
	// rebinding answer points at.
	internal, err := net.Listen("tcp", fmt.Sprintf("127.0.0.3:%d", good))
	if err != nil {
		t.Skipf("cannot listen on 127.0.0.3:%d: %v", good, err)
	}
	t.Cleanup(func() { internal.Close() })
	hit := &countingListener{Listener: internal}
	go func() {
		for {
			c, err := hit.Accept()
			if err != nil {
				return
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\ninternal")
			c.Close()
		}
	}()
	res := newResolver(nil)
	res.answerInTurn("rebind.test", "127.0.0.2", "127.0.0.3")
	proxy, _, reps := startProxy(t, &allowAll{}, Options{Resolver: res, NamesAddress: named("127.0.0.2")})
	for _, head := range []string{
		fmt.Sprintf("GET http://rebind.test:%d/ HTTP/1.1\r\n\r\n", good),
	} {
		resp, body, _ := rawRequest(t, proxy, head)
		if resp.StatusCode != http.StatusOK || body != "public" {
			t.Errorf("status %d, body %q; want the checked address's answer", resp.StatusCode, body)
		}
	}
	rep := reps.wait(t, 1)[0]
	if rep.Addr != netip.AddrPortFrom(netip.MustParseAddr("127.0.0.2"), good) {
		t.Errorf("dialled %v, want 127.0.0.2", rep.Addr)
	}
	if n := res.count("rebind.test"); n != 1 {
		t.Errorf("looked up %d times, want once", n)
	}
	if n := hit.accepted(); n != 0 {
		t.Errorf("the rebinding answer was dialled %d times", n)
	}
	// The second connection gets the rebinding answer, is checked again
	// and refused.
	refusedAddress(t, proxy, reps, fmt.Sprintf("CONNECT rebind.test:%d HTTP/1.1\r\n\r\n", good), ClassLoopback)
}

func TestPipelinedSecondRequestIsNotForwarded(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	port := outsideHTTP(t, "127.0.0.2", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Host+r.RequestURI)
		mu.Unlock()
		io.WriteString(w, "ok")
	}))
	res := newResolver(map[string][]string{"allowed.test": {"127.0.0.2"}})
	d := &allowAll{}
	proxy, _, reps := startProxy(t, d, Options{Resolver: res, NamesAddress: named("127.0.0.2")})
	// The second request names another host and rides on the first's
	// connection: it must be neither sent upstream nor carried undecided.
	head := fmt.Sprintf("POST http://allowed.test:%d/one HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi"+
		"GET http://evil.test:%d/two HTTP/1.1\r\nHost: evil.test\r\n\r\n", port, port)
	resp, body, _ := rawRequest(t, proxy, head)
	if resp.StatusCode != http.StatusOK || body != "ok" || !resp.Close {
		t.Errorf("status %d, body %q, close %t", resp.StatusCode, body, resp.Close)
	}
	reps.wait(t, 1)
	mu.Lock()
	defer mu.Unlock()
	if want := fmt.Sprintf("allowed.test:%d/one", port); len(seen) != 1 || seen[0] != want {
		t.Errorf("upstream saw %q, want only %q", seen, want)
	}
	if r := d.requests(); len(r) != 1 {
		t.Errorf("decided %v", r)
	}
}
