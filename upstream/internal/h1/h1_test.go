package h1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// newTransport is a Transport whose idle connections close when the test
// ends.
func newTransport(t testing.TB) *Transport {
	tr := &Transport{Fallback: http.DefaultTransport.(*http.Transport).Clone()}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// startCounting starts s, closed when the test ends, counting the
// connections it accepts.
func startCounting(t *testing.T, s *httptest.Server) *atomic.Int64 {
	var n atomic.Int64
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			n.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return &n
}

func post(t *testing.T, tr http.RoundTripper, ctx context.Context, url, body string) (string, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return fmt.Sprintf("%d %s", resp.StatusCode, b), err
}

func echo(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	w.Write(b)
}

func TestRequestsReuseOneConnection(t *testing.T) {
	t.Parallel()
	s := httptest.NewUnstartedServer(http.HandlerFunc(echo))
	conns := startCounting(t, s)
	tr := newTransport(t)
	for i := range 20 {
		got, err := post(t, tr, t.Context(), s.URL, fmt.Sprint(i))
		if want := fmt.Sprintf("200 %d", i); err != nil || got != want {
			t.Fatalf("call %d: %q, %v; want %q", i, got, err, want)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for 20 calls in a row, want 1", n)
	}
}

// TestAnswerWithoutBodyKeepsItsConnection: an answer with no body (a 202
// to a notification) frees its connection even if its body is never read.
func TestAnswerWithoutBodyKeepsItsConnection(t *testing.T) {
	t.Parallel()
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted)
	}))
	conns := startCounting(t, s)
	tr := newTransport(t)
	for range 5 {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL, strings.NewReader("{}"))
		resp, err := tr.RoundTrip(req)
		if err != nil || resp.StatusCode != http.StatusAccepted {
			t.Fatalf("%v, %v", resp, err)
		}
		resp.Body.Close()
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for 5 answers without a body, want 1", n)
	}
}

func TestConcurrentRequestsAnswerEachTheirOwn(t *testing.T) {
	t.Parallel()
	s := httptest.NewServer(http.HandlerFunc(echo))
	t.Cleanup(s.Close)
	tr := newTransport(t)
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			for j := range 20 {
				msg := fmt.Sprintf("%d-%d", i, j)
				if got, err := post(t, tr, t.Context(), s.URL, msg); err != nil || got != "200 "+msg {
					t.Errorf("%q, %v; want %q", got, err, "200 "+msg)
				}
			}
		})
	}
	wg.Wait()
	if n := len(tr.idle[hostPort(httptest.NewRequest("GET", s.URL, nil))]); n > DefaultMaxIdleConnsPerHost {
		t.Errorf("%d idle connections kept, want at most %d", n, DefaultMaxIdleConnsPerHost)
	}
}

// TestIdleConnectionTheServerClosedIsNotWrittenTo: a kept connection the
// server has since closed (as Node closes idle ones after 5 s) is found
// closed before the next request is written on it, which then goes on a
// new connection and reaches the server once.
func TestIdleConnectionTheServerClosedIsNotWrittenTo(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		echo(w, r)
	}))
	s.Config.IdleTimeout = 50 * time.Millisecond
	conns := startCounting(t, s)
	tr := newTransport(t)
	for i := range 3 {
		if got, err := post(t, tr, t.Context(), s.URL, "x"); err != nil || got != "200 x" {
			t.Fatalf("call %d: %q, %v", i, got, err)
		}
		time.Sleep(200 * time.Millisecond) // the server closes the connection
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("the server got %d calls for 3", n)
	}
	if n := conns.Load(); n != 3 {
		t.Errorf("%d connections, want 3 (each closed by the server while idle)", n)
	}
}

// TestKeptConnectionFoundClosedOnWriteIsRedialled: when the write to a kept
// connection fails before any byte of the request left, the request goes
// on a new connection.
func TestKeptConnectionFoundClosedOnWriteIsRedialled(t *testing.T) {
	t.Parallel()
	s := httptest.NewServer(http.HandlerFunc(echo))
	t.Cleanup(s.Close)
	tr := newTransport(t)
	if _, err := post(t, tr, t.Context(), s.URL, "first"); err != nil {
		t.Fatal(err)
	}
	addr := hostPort(httptest.NewRequest("GET", s.URL, nil))
	c := tr.takeIdle(addr)
	c.nc.(*net.TCPConn).CloseWrite() // our side: writes now fail at once, reads do not
	tr.put(addr, c)
	if got, err := post(t, tr, t.Context(), s.URL, "second"); err != nil || got != "200 second" {
		t.Errorf("%q, %v; want the request sent again on a new connection", got, err)
	}
}

func TestCancelledRequestEndsItsExchange(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(s.Close)
	t.Cleanup(func() { close(release) })
	tr := newTransport(t)
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(100*time.Millisecond, cancel)
	begin := time.Now()
	_, err := post(t, tr, ctx, s.URL, "x")
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if d := time.Since(begin); d > 3*time.Second {
		t.Errorf("the cancelled request took %s", d)
	}
	if n := len(tr.idle); n != 0 {
		t.Errorf("%d hosts with idle connections: the cancelled exchange's was kept", n)
	}
}

// TestStreamedBodyIsReadAsItComesAndClosingItEarlyDropsTheConnection: an
// event stream's events are read as the server sends them, and a body
// closed before its end closes its connection rather than keeping it.
func TestStreamedBodyIsReadAsItComesAndClosingItEarlyDropsTheConnection(t *testing.T) {
	t.Parallel()
	next := make(chan struct{})
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			echo(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 3 {
			fmt.Fprintf(w, "data: %d\n\n", i)
			w.(http.Flusher).Flush()
			select {
			case <-next:
			case <-r.Context().Done():
				return
			}
		}
	}))
	conns := startCounting(t, s)
	tr := newTransport(t)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, s.URL, nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	for i := range 2 {
		line, err := br.ReadString('\n')
		if want := fmt.Sprintf("data: %d\n", i); err != nil || line != want {
			t.Fatalf("%q, %v; want %q", line, err, want)
		}
		br.ReadString('\n')
		next <- struct{}{}
	}
	resp.Body.Close()
	if got, err := post(t, tr, t.Context(), s.URL, "after"); err != nil || got != "200 after" {
		t.Fatalf("%q, %v", got, err)
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2: the stream closed early is not kept", n)
	}
}

func TestHTTPSAndProxiedRequestsGoToFallback(t *testing.T) {
	t.Parallel()
	tlsServer := httptest.NewTLSServer(http.HandlerFunc(echo))
	t.Cleanup(tlsServer.Close)
	tr := &Transport{Fallback: tlsServer.Client().Transport.(*http.Transport).Clone()}
	t.Cleanup(tr.CloseIdleConnections)
	if got, err := post(t, tr, t.Context(), tlsServer.URL, "over tls"); err != nil || got != "200 over tls" {
		t.Errorf("https: %q, %v", got, err)
	}

	var proxied atomic.Int64
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Add(1)
		io.WriteString(w, "from the proxy")
	}))
	t.Cleanup(proxy.Close)
	proxyURL, _ := url.Parse(proxy.URL)
	tr = &Transport{Fallback: &http.Transport{Proxy: http.ProxyURL(proxyURL)}}
	t.Cleanup(tr.CloseIdleConnections)
	if got, err := post(t, tr, t.Context(), "http://upstream.invalid/mcp", "x"); err != nil || got != "200 from the proxy" || proxied.Load() != 1 {
		t.Errorf("proxied: %q, %v (the proxy got %d requests)", got, err, proxied.Load())
	}
}

// answering is a TCP server that reads one request per connection and
// writes answer to it, then closes it.
func answering(t testing.TB, answer func() []byte) string {
	l := testkit.Loopback(t)
	testkit.ServeConns(t, l, func(c net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
			c.Write(answer())
		}
	})
	return "http://" + l.Addr().String() + "/mcp"
}

type exchangeOutcome struct {
	status  int
	header  string
	body    string
	failed  bool
	bodyErr bool
}

func exchangeWith(tr http.RoundTripper, url string) exchangeOutcome {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0"}`))
	req.Close = true // the server closes each connection after its answer: none is reused
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return exchangeOutcome{failed: true}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	var h bytes.Buffer
	resp.Header.Write(&h)
	return exchangeOutcome{status: resp.StatusCode, header: h.String(), body: string(b), bodyErr: err != nil}
}

// FuzzAnswersReadAsNetHTTPReadsThem holds what the transport makes of any
// bytes a server answers with to what net/http's Transport makes of them:
// the same status, headers and body, or a failure in the same place.
func FuzzAnswersReadAsNetHTTPReadsThem(f *testing.F) {
	for _, seed := range []string{
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\n\r\nuntil the end",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx",
		"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\nx",
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab",
		"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		"HTTP/1.1 101 Switching Protocols\r\n\r\n",
		"HTTP/1.1 204 No Content\r\nContent-Length: 3\r\n\r\nabc",
		"garbage",
		"",
	} {
		f.Add(seed)
	}
	var answer atomic.Value
	url := answering(f, func() []byte { return []byte(answer.Load().(string)) })
	ours := newTransport(f)
	theirs := &http.Transport{DisableCompression: true}
	f.Cleanup(theirs.CloseIdleConnections)
	f.Fuzz(func(t *testing.T, raw string) {
		answer.Store(raw)
		got, want := exchangeWith(ours, url), exchangeWith(theirs, url)
		if got != want {
			t.Errorf("answer %q\nh1:       %+v\nnet/http: %+v", raw, got, want)
		}
	})
}
