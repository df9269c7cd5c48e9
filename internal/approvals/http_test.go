package approvals

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/state"
)

const testToken = "TESTTOKEN0123456789ABCDEFG"

// newPage serves a broker's page on an httptest server that accepts its
// own loopback Host.
func newPage(t *testing.T) (*Broker, *httptest.Server) {
	t.Helper()
	b := NewBroker(nil)
	srv := httptest.NewUnstartedServer(nil)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	h, err := NewHandler(b, HandlerOptions{Token: testToken, Hosts: LoopbackHosts(port)})
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = h
	srv.Start()
	t.Cleanup(func() { b.Close(); srv.Close() })
	return b, srv
}

func do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func get(t *testing.T, u string, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	return do(t, req)
}

func TestPageNeedsTheToken(t *testing.T) {
	t.Parallel()
	_, srv := newPage(t)
	tests := []struct {
		name   string
		path   string
		header http.Header
		want   int
	}{
		{"the page without a token is forbidden", "/", nil, http.StatusForbidden},
		{"the page with a wrong token is forbidden", "/?token=WRONG", nil, http.StatusForbidden},
		{"the page with a token prefix is forbidden", "/?token=" + testToken[:10], nil, http.StatusForbidden},
		{"the page with its token is served", "/?token=" + testToken, nil, http.StatusOK},
		{"the state without a token is forbidden", "/api/asks", nil, http.StatusForbidden},
		{"the state with the token in the URL is forbidden", "/api/asks?token=" + testToken, nil, http.StatusForbidden},
		{"the state with a bearer token is served", "/api/asks", http.Header{"Authorization": {"Bearer " + testToken}}, http.StatusOK},
		{"the event stream without a token is forbidden", "/api/events", nil, http.StatusForbidden},
		{"the static script needs no token", "/static/app.js", nil, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got, body := get(t, srv.URL+tt.path, tt.header); got != tt.want {
				t.Errorf("GET %s = %d (%s), want %d", tt.path, got, body, tt.want)
			}
		})
	}
}

func TestDNSRebindingHostIsRefused(t *testing.T) {
	t.Parallel()
	_, srv := newPage(t)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/?token="+testToken, nil)
	req.Host = "attacker.example:" + strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port)
	if got, _ := do(t, req); got != http.StatusForbidden {
		t.Errorf("GET with Host %s = %d, want 403", req.Host, got)
	}
}

func TestPageHeadersForbidFramingAndInlineScript(t *testing.T) {
	t.Parallel()
	_, srv := newPage(t)
	resp, err := http.Get(srv.URL + "/?token=" + testToken)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"script-src 'self'", "frame-ancestors 'none'", "default-src 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if resp.Header.Get("X-Frame-Options") != "DENY" || resp.Header.Get("Referrer-Policy") != "no-referrer" {
		t.Errorf("headers = %v", resp.Header)
	}
}

// decideReq is a POST answering ask id, as the page sends it.
func decideReq(t *testing.T, srv *httptest.Server, id, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/api/asks/"+id, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	return req
}

func TestCrossOriginDecisionIsRefused(t *testing.T) {
	t.Parallel()
	b, srv := newPage(t)
	got := resolveAsync(t.Context(), b, Request{ID: "abc", Tool: "mcp:fs:write_file"})
	waitPending(t, b, 1)
	tests := []struct {
		name   string
		modify func(*http.Request)
		want   int
	}{
		{"a POST from another origin", func(r *http.Request) { r.Header.Set("Origin", "http://attacker.example") }, http.StatusForbidden},
		{"a POST from a null origin", func(r *http.Request) { r.Header.Set("Origin", "null") }, http.StatusForbidden},
		{"a cross-site POST by Sec-Fetch-Site", func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") }, http.StatusForbidden},
		{"a form POST with the token in the URL only", func(r *http.Request) {
			r.Header.Del("Authorization")
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			r.URL.RawQuery = "token=" + testToken
		}, http.StatusForbidden},
		{"a POST that is not JSON", func(r *http.Request) { r.Header.Set("Content-Type", "text/plain") }, http.StatusUnsupportedMediaType},
		{"a POST with a wrong token", func(r *http.Request) { r.Header.Set("Authorization", "Bearer nope") }, http.StatusForbidden},
	}
	for _, tt := range tests {
		req := decideReq(t, srv, "abc", `{"decision":"allow_once"}`)
		tt.modify(req)
		if code, body := do(t, req); code != tt.want {
			t.Errorf("%s: %d (%s), want %d", tt.name, code, body, tt.want)
		}
	}
	if p := b.Pending(); len(p) != 1 {
		t.Fatalf("a refused request decided the ask: pending %v", p)
	}

	// The page's own request goes through.
	req := decideReq(t, srv, "abc", `{"decision":"allow_session","via":"page"}`)
	req.Header.Set("Origin", srv.URL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	if code, body := do(t, req); code != http.StatusOK {
		t.Fatalf("same-origin decision: %d %s", code, body)
	}
	if r := <-got; r.err != nil || r.d.Answer != state.AllowSession || r.d.Via != ViaPage {
		t.Errorf("Resolve = %+v, %v", r.d, r.err)
	}
	if code, _ := do(t, decideReq(t, srv, "abc", `{"decision":"deny"}`)); code != http.StatusNotFound {
		t.Errorf("deciding a decided ask = %d, want 404", code)
	}
	if code, _ := do(t, decideReq(t, srv, "zzz", `{"decision":"maybe"}`)); code != http.StatusBadRequest {
		t.Errorf("an unknown decision = %d, want 400", code)
	}
}

func TestEventStreamShowsANewAskAtOnce(t *testing.T) {
	t.Parallel()
	b, srv := newPage(t)
	resp, err := http.Get(srv.URL + "/api/events?token=" + url.QueryEscape(testToken))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q", ct)
	}
	events := make(chan Snapshot, 10)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var s Snapshot
				if json.Unmarshal([]byte(data), &s) == nil {
					events <- s
				}
			}
		}
		close(events)
	}()
	if s := <-events; len(s.Pending) != 0 {
		t.Fatalf("first state = %+v, want no pending ask", s)
	}
	start := time.Now()
	resolveAsync(t.Context(), b, Request{ID: "new", Tool: "mcp:fs:write_file", Arguments: map[string]any{"content": "<script>alert(1)</script>"}})
	select {
	case s := <-events:
		if len(s.Pending) != 1 || s.Pending[0].ID != "new" || s.Pending[0].Arguments["content"] != "<script>alert(1)</script>" {
			t.Errorf("state after the ask = %+v", s)
		}
		if d := time.Since(start); d > 3*time.Second { // pushed, not polled
			t.Errorf("the ask took %v to reach the stream", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no event for the new ask")
	}
}

func TestClientListsAndDecides(t *testing.T) {
	t.Parallel()
	b, srv := newPage(t)
	c := &Client{TokenFile: TokenFile{URL: srv.URL + "/", Token: testToken}}
	got := resolveAsync(t.Context(), b, Request{ID: "abc", Tool: "mcp:fs:write_file"})
	waitPending(t, b, 1)
	s, err := c.Snapshot(t.Context())
	if err != nil || len(s.Pending) != 1 || s.Pending[0].ID != "abc" {
		t.Fatalf("Snapshot = %+v, %v", s, err)
	}
	if err := c.Decide(t.Context(), "nope", state.AllowOnce, "me"); err == nil || !strings.Contains(err.Error(), ErrUnknownAsk.Error()) {
		t.Errorf("Decide of an unknown id: %v", err)
	}
	if err := c.Decide(t.Context(), "abc", state.AllowOnce, "me"); err != nil {
		t.Fatal(err)
	}
	if r := <-got; r.err != nil || r.d != (Decision{Answer: state.AllowOnce, Via: ViaCLI, Who: "me"}) {
		t.Errorf("Resolve = %+v, %v", r.d, r.err)
	}
	bad := &Client{TokenFile: TokenFile{URL: srv.URL + "/", Token: "wrong"}}
	if _, err := bad.Snapshot(t.Context()); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("Snapshot with a wrong token: %v", err)
	}
}
