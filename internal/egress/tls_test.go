package egress

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// tlsOutside starts a TLS server on 127.0.0.2 (certificate for
// example.com and 127.0.0.1) that counts its connections, and a proxy
// that resolves example.com and other.test to it, names 127.0.0.2 and
// treats its port as a TLS port.
func tlsOutside(t *testing.T) (proxy string, port uint16, srv *httptest.Server, accepted *countingListener, reps *reports) {
	t.Helper()
	srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "secret") }))
	accepted = &countingListener{Listener: outsideListener(t, "127.0.0.2")}
	srv.Listener = accepted
	srv.StartTLS()
	t.Cleanup(srv.Close)
	port = portOf(accepted)
	res := newResolver(map[string][]string{"example.com": {"127.0.0.2"}, "other.test": {"127.0.0.2"}})
	proxy, _, reps = startProxy(t, &allowAll{}, Options{Resolver: res, NamesAddress: named("127.0.0.2"), TLSPorts: []uint16{port}, HeadTimeout: 2 * time.Second})
	return proxy, port, srv, accepted, reps
}

// tlsThrough opens a CONNECT tunnel to target and runs a TLS handshake in
// it with serverName as SNI ("" for none).
func tlsThrough(t *testing.T, proxy, target, serverName string) error {
	t.Helper()
	resp, _, c := rawRequest(t, proxy, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n")
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("CONNECT status %d", resp.StatusCode)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	tc := tls.Client(c, &tls.Config{ServerName: serverName, InsecureSkipVerify: true}) //nolint:gosec // the test checks the proxy, not the certificate
	return tc.Handshake()
}

func TestSNIMismatchIsRefused(t *testing.T) {
	t.Parallel()
	proxy, port, _, accepted, reps := tlsOutside(t)
	err := tlsThrough(t, proxy, fmt.Sprintf("example.com:%d", port), "other.test")
	if err == nil {
		t.Fatal("a handshake naming another host went through")
	}
	rep := reps.wait(t, 1)[0]
	if rep.Outcome != TLSRefused || rep.Addr.IsValid() {
		t.Errorf("report %+v", rep)
	}
	if n := accepted.accepted(); n != 0 {
		t.Errorf("the upstream was dialled %d times", n)
	}
}

func TestClientHelloWithoutSNIToNamedHostIsRefused(t *testing.T) {
	t.Parallel()
	proxy, port, _, accepted, reps := tlsOutside(t)
	if err := tlsThrough(t, proxy, fmt.Sprintf("example.com:%d", port), ""); err == nil {
		t.Fatal("a handshake naming no host went through")
	}
	if rep := reps.wait(t, 1)[0]; rep.Outcome != TLSRefused {
		t.Errorf("report %+v", rep)
	}
	if n := accepted.accepted(); n != 0 {
		t.Errorf("the upstream was dialled %d times", n)
	}
}

func TestIPLiteralConnectWithForeignSNIIsRefused(t *testing.T) {
	t.Parallel()
	proxy, port, _, accepted, reps := tlsOutside(t)
	if err := tlsThrough(t, proxy, fmt.Sprintf("127.0.0.2:%d", port), "example.com"); err == nil {
		t.Fatal("a handshake naming a host went through a tunnel to an address")
	}
	if rep := reps.wait(t, 1)[0]; rep.Outcome != TLSRefused {
		t.Errorf("report %+v", rep)
	}
	// Without a server name, as clients connect to an address, it works.
	if err := tlsThrough(t, proxy, fmt.Sprintf("127.0.0.2:%d", port), ""); err != nil {
		t.Errorf("a handshake to the address itself: %v", err)
	}
	if n := accepted.accepted(); n != 1 {
		t.Errorf("the upstream was dialled %d times, want once", n)
	}
}

func TestSNISpelledDifferentlyButTheSameHostIsAccepted(t *testing.T) {
	t.Parallel()
	proxy, port, _, _, reps := tlsOutside(t)
	if err := tlsThrough(t, proxy, fmt.Sprintf("EXAMPLE.com.:%d", port), "Example.Com"); err != nil {
		t.Fatalf("handshake: %v", err)
	}
	if rep := reps.wait(t, 1)[0]; rep.Outcome != Carried || rep.Request.Host != "example.com" {
		t.Errorf("report %+v", rep)
	}
}

func TestNonTLSBytesOnTLSPortAreRefused(t *testing.T) {
	t.Parallel()
	proxy, port, _, accepted, reps := tlsOutside(t)
	resp, _, c := rawRequest(t, proxy, fmt.Sprintf("CONNECT example.com:%d HTTP/1.1\r\n\r\n", port))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT status %d", resp.StatusCode)
	}
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: internal\r\n\r\n")
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, _ := io.ReadAll(c)
	if string(b) != string(tlsAccessDenied) {
		t.Errorf("got %q, want a TLS access_denied alert", b)
	}
	if rep := reps.wait(t, 1)[0]; rep.Outcome != TLSRefused {
		t.Errorf("report %+v", rep)
	}
	if n := accepted.accepted(); n != 0 {
		t.Errorf("the upstream was dialled %d times", n)
	}
}

func TestSilentClientOnTLSPortIsCutOff(t *testing.T) {
	t.Parallel()
	proxy, port, _, accepted, reps := tlsOutside(t)
	resp, _, c := rawRequest(t, proxy, fmt.Sprintf("CONNECT example.com:%d HTTP/1.1\r\n\r\n", port))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT status %d", resp.StatusCode)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadAll(c); err != nil {
		t.Errorf("the proxy did not end the connection: %v", err)
	}
	if rep := reps.wait(t, 1)[0]; rep.Outcome != TLSRefused {
		t.Errorf("report %+v", rep)
	}
	if n := accepted.accepted(); n != 0 {
		t.Errorf("the upstream was dialled %d times", n)
	}
}
