package h1

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// refusedRequests are requests net/http's Transport refuses to send: a
// header or trailer whose name or value would let a header be injected
// into the request, or smuggle bytes a server may read otherwise, and a
// method that is not a token.
var refusedRequests = map[string]func(r *http.Request){
	"header name with CRLF":    func(r *http.Request) { r.Header["X-A\r\nX-Injected"] = []string{"1"} },
	"header name with a space": func(r *http.Request) { r.Header["X A"] = []string{"1"} },
	"empty header name":        func(r *http.Request) { r.Header[""] = []string{"1"} },
	"header value with CRLF":   func(r *http.Request) { r.Header.Set("X-A", "1\r\nX-Injected: 1") },
	"header value with a NUL":  func(r *http.Request) { r.Header.Set("X-A", "a\x00b") },
	"header value with DEL":    func(r *http.Request) { r.Header.Set("X-A", "a\x7fb") },
	"trailer name with CRLF":   func(r *http.Request) { r.Trailer = http.Header{"X-T\r\nX-Injected": {"1"}} },
	"trailer value with a NUL": func(r *http.Request) { r.Trailer = http.Header{"X-T": {"\x00"}} },
	"method with CRLF":         func(r *http.Request) { r.Method = "POST / HTTP/1.1\r\nX-Injected: 1\r\n\r\nPOST" },
	"method with a space":      func(r *http.Request) { r.Method = "PO ST" },
	"no host":                  func(r *http.Request) { r.URL.Host = "" },
	"nil header":               func(r *http.Request) { r.Header = nil },
}

// TestRefusesWhatNetHTTPRefuses: a request net/http's Transport would not
// send is not sent either (the server sees no connection), and fails with
// net/http's own error.
func TestRefusesWhatNetHTTPRefuses(t *testing.T) {
	s := httptest.NewUnstartedServer(http.HandlerFunc(echo))
	conns := startCounting(t, s)
	h1, std := newTransport(t), http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(std.CloseIdleConnections)
	for name, edit := range refusedRequests {
		t.Run(name, func(t *testing.T) {
			send := func(tr http.RoundTripper) error {
				req, err := http.NewRequest(http.MethodPost, s.URL+"/mcp", strings.NewReader(`{}`))
				if err != nil {
					t.Fatal(err)
				}
				edit(req)
				resp, err := tr.RoundTrip(req)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				return err
			}
			want := send(std)
			if want == nil {
				t.Fatal("net/http sent it: not a refused request")
			}
			before := conns.Load()
			if got := send(h1); got == nil || got.Error() != want.Error() {
				t.Fatalf("h1 answered %v, where net/http refuses with %q", got, want)
			}
			if n := conns.Load() - before; n != 0 {
				t.Fatalf("the server saw %d connections for a request net/http refuses", n)
			}
		})
	}
}

// FuzzRefusesWhatNetHTTPRefuses holds h1 to net/http's Transport on any
// method, header and trailer: the same refusal, or both send it.
func FuzzRefusesWhatNetHTTPRefuses(f *testing.F) {
	f.Add("POST", "X-A", "1", "X-T", "2")
	f.Add("POST / HTTP/1.1\r\nX: 1\r\n\r\nGET", "X-A\r\nX-B", "1\r\n2", "", "\x00")
	f.Add("", "", "\x7f", "X T", "")
	s := httptest.NewUnstartedServer(http.HandlerFunc(echo))
	s.Start()
	f.Cleanup(s.Close)
	h1, std := newTransport(f), http.DefaultTransport.(*http.Transport).Clone()
	f.Cleanup(std.CloseIdleConnections)
	f.Fuzz(func(t *testing.T, method, name, value, trailerName, trailerValue string) {
		send := func(tr http.RoundTripper) error {
			req, err := http.NewRequest(http.MethodPost, s.URL+"/mcp", strings.NewReader(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			req.Method = method
			req.Header[name] = []string{value}
			if trailerName != "" || trailerValue != "" {
				req.Trailer = http.Header{trailerName: {trailerValue}}
			}
			resp, err := tr.RoundTrip(req)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			return err
		}
		want, got := send(std), send(h1)
		if (want == nil) != (got == nil) || want != nil && want.Error() != got.Error() {
			t.Fatalf("h1 answered %v, net/http %v", got, want)
		}
	})
}
