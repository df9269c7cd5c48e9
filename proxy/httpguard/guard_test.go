package httpguard

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// reached is the handler behind the guard: it answers 200 with the body it
// read, so a test sees both whether a request got through and what of it.
var reached = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("X-Reached", "yes")
	_, _ = w.Write(body)
})

func newTestGuard(t *testing.T, o Options, id Identity) http.Handler {
	t.Helper()
	h, err := New(o, id, reached)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

type guardRequest struct {
	name   string
	host   string
	header http.Header
	body   string
	want   int
}

func runGuard(t *testing.T, h http.Handler, tests []guardRequest) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "http://127.0.0.1:8765/mcp", strings.NewReader(tt.body))
			if tt.host != "" {
				req.Host = tt.host
			}
			for k, vs := range tt.header {
				req.Header[k] = vs
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.want {
				t.Errorf("status = %d, want %d (body %q)", rec.Code, tt.want, rec.Body.String())
			}
			if got := rec.Header().Get("X-Reached") == "yes"; got != (tt.want == http.StatusOK) {
				t.Errorf("reached the MCP handler = %v with status %d", got, rec.Code)
			}
		})
	}
}

func TestDNSRebindingHostIsRefused(t *testing.T) {
	t.Parallel()
	// A page on attacker.example whose name now resolves to 127.0.0.1: the
	// browser connects to loopback but still sends its own name as Host.
	h := newTestGuard(t, Options{}, Identity{Token: "s3cret"})
	runGuard(t, h, []guardRequest{
		{name: "attacker name with port", host: "attacker.example:8765", want: http.StatusForbidden},
		{name: "attacker name without port", host: "attacker.example", want: http.StatusForbidden},
		{name: "name starting with localhost", host: "localhost.attacker.example:8765", want: http.StatusForbidden},
		{name: "wildcard DNS for 127.0.0.1", host: "127.0.0.1.nip.io:8765", want: http.StatusForbidden},
		{name: "other loopback address not listed", host: "127.0.0.2:8765", want: http.StatusForbidden},
		{name: "unbracketed IPv6", host: "::1:8765", want: http.StatusForbidden},
		{name: "empty Host", host: " ", want: http.StatusForbidden},
	})
}

func TestLocalhostHostsAreAccepted(t *testing.T) {
	t.Parallel()
	h := newTestGuard(t, Options{}, Identity{})
	runGuard(t, h, []guardRequest{
		{name: "localhost with port", host: "localhost:8765", want: http.StatusOK},
		{name: "localhost in capitals", host: "LOCALHOST:1", want: http.StatusOK},
		{name: "localhost with trailing dot", host: "localhost.", want: http.StatusOK},
		{name: "127.0.0.1 without port", host: "127.0.0.1", want: http.StatusOK},
		{name: "IPv6 loopback with port", host: "[::1]:8765", want: http.StatusOK},
		{name: "IPv6 loopback without port", host: "[::1]", want: http.StatusOK},
	})
}

func TestHostAllowlistApplies(t *testing.T) {
	t.Parallel()
	h := newTestGuard(t, Options{AllowedHosts: []string{"mcp.example.com", "10.0.0.5:8443", "[fd00::1]"}}, Identity{})
	runGuard(t, h, []guardRequest{
		{name: "listed name, any port", host: "mcp.example.com:9000", want: http.StatusOK},
		{name: "listed name in other case", host: "MCP.Example.COM", want: http.StatusOK},
		{name: "listed address and port", host: "10.0.0.5:8443", want: http.StatusOK},
		{name: "listed address, other port", host: "10.0.0.5:8444", want: http.StatusForbidden},
		{name: "listed IPv6", host: "[fd00::1]:1", want: http.StatusOK},
		{name: "subdomain of a listed name", host: "x.mcp.example.com", want: http.StatusForbidden},
		{name: "localhost still accepted", host: "localhost:8765", want: http.StatusOK},
	})
}

func TestCrossOriginRequestIsRefused(t *testing.T) {
	t.Parallel()
	h := newTestGuard(t, Options{AllowedOrigins: []string{"https://app.example.com"}}, Identity{})
	origin := func(v ...string) http.Header { return http.Header{"Origin": v} }
	runGuard(t, h, []guardRequest{
		{name: "page on another site", header: origin("https://attacker.example"), want: http.StatusForbidden},
		{name: "opaque origin of a sandboxed frame", header: origin("null"), want: http.StatusForbidden},
		{name: "name starting with localhost", header: origin("http://localhost.attacker.example"), want: http.StatusForbidden},
		{name: "listed origin on another port", header: origin("https://app.example.com:8443"), want: http.StatusForbidden},
		{name: "listed host over plain http", header: origin("http://app.example.com"), want: http.StatusForbidden},
		{name: "non-http scheme on localhost", header: origin("file://localhost"), want: http.StatusForbidden},
		{name: "two Origin headers", header: origin("http://localhost", "https://attacker.example"), want: http.StatusForbidden},
		{name: "listed origin", header: origin("https://app.example.com"), want: http.StatusOK},
		{name: "localhost page", header: origin("http://localhost:5173"), want: http.StatusOK},
		{name: "loopback page over https", header: origin("https://127.0.0.1:3000"), want: http.StatusOK},
		{name: "IPv6 loopback page", header: origin("http://[::1]:3000"), want: http.StatusOK},
		{name: "no Origin: a non-browser client", want: http.StatusOK},
	})
}

func TestMissingTokenIs401(t *testing.T) {
	t.Parallel()
	h := newTestGuard(t, Options{}, Identity{Token: "s3cret"})
	auth := func(v string) http.Header { return http.Header{"Authorization": {v}} }
	runGuard(t, h, []guardRequest{
		{name: "no Authorization header", want: http.StatusUnauthorized},
		{name: "wrong token", header: auth("Bearer s3cre"), want: http.StatusUnauthorized},
		{name: "token with a suffix", header: auth("Bearer s3cretX"), want: http.StatusUnauthorized},
		{name: "empty bearer", header: auth("Bearer "), want: http.StatusUnauthorized},
		{name: "other scheme", header: auth("Basic czNjcmV0"), want: http.StatusUnauthorized},
		{name: "right token", header: auth("Bearer s3cret"), want: http.StatusOK},
	})
}

func TestBadHostIsRefusedBeforeTheTokenIsChecked(t *testing.T) {
	t.Parallel()
	// A rebinding page has no token; it must learn nothing but 403.
	h := newTestGuard(t, Options{}, Identity{Token: "s3cret"})
	runGuard(t, h, []guardRequest{
		{name: "bad Host, no token", host: "attacker.example", want: http.StatusForbidden},
		{name: "bad Origin, right token", header: http.Header{"Origin": {"https://attacker.example"}, "Authorization": {"Bearer s3cret"}}, want: http.StatusForbidden},
	})
}

func TestOversizedBodyIs413(t *testing.T) {
	t.Parallel()
	h := newTestGuard(t, Options{MaxBodyBytes: 16}, Identity{})
	runGuard(t, h, []guardRequest{
		{name: "body over the limit", body: strings.Repeat("x", 17), want: http.StatusRequestEntityTooLarge},
		{name: "body at the limit", body: strings.Repeat("x", 16), want: http.StatusOK},
	})

	t.Run("body over the limit without Content-Length", func(t *testing.T) {
		t.Parallel()
		req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "http://localhost/mcp", io.MultiReader(strings.NewReader(strings.Repeat("x", 10)), strings.NewReader(strings.Repeat("y", 10))))
		req.ContentLength = -1
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusRequestEntityTooLarge {
			t.Errorf("status = %d, want 413", rec.Code)
		}
	})
	t.Run("declared length over the limit", func(t *testing.T) {
		t.Parallel()
		req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "http://localhost/mcp", strings.NewReader("{}"))
		req.ContentLength = 1 << 40
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusRequestEntityTooLarge {
			t.Errorf("status = %d, want 413", rec.Code)
		}
	})
	t.Run("default limit is 4 MiB", func(t *testing.T) {
		t.Parallel()
		h := newTestGuard(t, Options{}, Identity{})
		for size, want := range map[int]int{DefaultMaxBodyBytes: http.StatusOK, DefaultMaxBodyBytes + 1: http.StatusRequestEntityTooLarge} {
			req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "http://localhost/mcp", strings.NewReader(strings.Repeat("x", size)))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != want {
				t.Errorf("%d-byte body: status = %d, want %d", size, rec.Code, want)
			}
		}
	})
}

func TestMalformedAllowlistEntryIsAnError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		o    Options
	}{
		{"host with a path", Options{AllowedHosts: []string{"example.com/mcp"}}},
		{"host with a wildcard", Options{AllowedHosts: []string{"*.example.com"}}},
		{"unbracketed IPv6 host", Options{AllowedHosts: []string{"fd00::1"}}},
		{"host with a bad port", Options{AllowedHosts: []string{"example.com:http"}}},
		{"origin without scheme", Options{AllowedOrigins: []string{"app.example.com"}}},
		{"origin with a path", Options{AllowedOrigins: []string{"https://app.example.com/x"}}},
		{"origin with another scheme", Options{AllowedOrigins: []string{"ftp://app.example.com"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := New(tt.o, Identity{}, reached); err == nil {
				t.Errorf("New(%+v) = nil error, want one", tt.o)
			}
		})
	}
}
