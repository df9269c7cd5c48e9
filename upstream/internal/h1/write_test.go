package h1

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"testing"
)

// requestOf builds the request the fuzzer describes; each call gives a
// new one, with a body of its own.
func requestOf(t testing.TB, method, url, name, value, body string, lengthOff int8, userAgent uint8, traced bool) *http.Request {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(http.MethodPost, url, rd)
	if err != nil {
		return nil
	}
	req.Method = method
	if name != "" {
		req.Header[name] = []string{value, " second\t"}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Mcp-Session-Id", "abc")
	switch userAgent % 4 {
	case 1:
		req.Header.Set("User-Agent", " mine ")
	case 2:
		req.Header["User-Agent"] = nil
	case 3:
		req.Header.Set("User-Agent", "")
	}
	if body != "" {
		req.ContentLength += int64(lengthOff)
	}
	if traced {
		req = req.WithContext(httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{}))
	}
	return req
}

// sameAsRequestWrite fails t unless writeRequest writes what Request.Write
// writes, and fails when it fails.
func sameAsRequestWrite(t *testing.T, build func() *http.Request) {
	t.Helper()
	req := build()
	if req == nil || !sendable(req) {
		return
	}
	var want bytes.Buffer
	wantErr := req.Write(&want)
	var got bytes.Buffer
	bw := bufio.NewWriter(&got)
	err := writeRequest(bw, build())
	bw.Flush()
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("writeRequest failed with %v, Request.Write with %v", err, wantErr)
	}
	if err == nil && !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("writeRequest wrote\n%q\nRequest.Write writes\n%q", got.Bytes(), want.Bytes())
	}
}

func TestWriteRequestIsRequestWrite(t *testing.T) {
	for _, tc := range []struct {
		name, method, url, header, value, body string
		lengthOff                              int8
		userAgent                              uint8
		traced                                 bool
	}{
		{"a call", "POST", "http://127.0.0.1:8080/mcp", "Mcp-Protocol-Version", "2025-06-18", `{"jsonrpc":"2.0"}`, 0, 0, false},
		{"a GET without body", "GET", "http://h/mcp?x=1&y=%20", "Accept", "text/event-stream", "", 0, 0, false},
		{"a DELETE without body", "DELETE", "http://h:1/mcp", "", "", "", 0, 1, false},
		{"no method", "", "http://h/", "", "", "", 0, 2, false},
		{"a HEAD", "HEAD", "http://h/", "", "", "", 0, 3, false},
		{"lower-case header key", "POST", "http://h/mcp", "content-length", "5", "{}", 0, 0, false},
		{"a header named Host", "POST", "http://h/mcp", "Host", "evil", "{}", 0, 0, false},
		{"an IPv6 host", "POST", "http://[::1]:80/mcp", "X-A", " spaced\t", "{}", 0, 0, false},
		{"a zone in the host", "POST", "http://[fe80::1%25eth0]:80/mcp", "", "", "{}", 0, 0, false},
		{"a host in another script", "POST", "http://bücher.example/mcp", "", "", "{}", 0, 0, false},
		{"an opaque URL", "POST", "http:opaque", "", "", "{}", 0, 0, false},
		{"a body shorter than its length", "POST", "http://h/mcp", "", "", "{}", 3, 0, false},
		{"a body longer than its length", "POST", "http://h/mcp", "", "", "{}", -1, 0, false},
		{"a traced request", "POST", "http://h/mcp", "", "", "{}", 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sameAsRequestWrite(t, func() *http.Request {
				return requestOf(t, tc.method, tc.url, tc.header, tc.value, tc.body, tc.lengthOff, tc.userAgent, tc.traced)
			})
		})
	}
}

// FuzzWriteRequestIsRequestWrite holds writeRequest to Request.Write on
// any sendable request.
func FuzzWriteRequestIsRequestWrite(f *testing.F) {
	f.Add("POST", "http://127.0.0.1:8080/mcp", "Mcp-Protocol-Version", "2025-06-18", `{"a":1}`, int8(0), uint8(0), false)
	f.Add("GET", "http://h/a?b#c", "Accept", "", "", int8(0), uint8(1), false)
	f.Add("PATCH", "http://[::1]/", "host", "x", "x", int8(2), uint8(2), true)
	f.Fuzz(func(t *testing.T, method, url, name, value, body string, lengthOff int8, userAgent uint8, traced bool) {
		sameAsRequestWrite(t, func() *http.Request {
			return requestOf(t, method, url, name, value, body, lengthOff, userAgent, traced)
		})
	})
}

// BenchmarkWriteRequest compares writeRequest with Request.Write on the
// POST of an echo call.
func BenchmarkWriteRequest(b *testing.B) {
	req := requestOf(b, "POST", "http://127.0.0.1:8080/mcp", "Mcp-Protocol-Version", "2025-06-18",
		`{"jsonrpc":"2.0","id":1099511627777,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello"}}}`, 0, 0, false)
	req.Header.Set("Accept", "application/json, text/event-stream")
	bw := bufio.NewWriter(io.Discard)
	for _, w := range []struct {
		name  string
		write func(*http.Request) error
	}{
		{"Request.Write", func(r *http.Request) error { return r.Write(bw) }},
		{"writeRequest", func(r *http.Request) error { return writeRequest(bw, r) }},
	} {
		b.Run(w.name, func(b *testing.B) {
			for b.Loop() {
				req.Body, _ = req.GetBody()
				if err := w.write(req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestWriteRequestWritesACallItself: the POST of a call is one
// writeRequest writes itself, not Request.Write.
func TestWriteRequestWritesACallItself(t *testing.T) {
	req := requestOf(t, "POST", "http://127.0.0.1:8080/mcp", "Accept", "application/json", `{}`, 0, 0, false)
	if _, _, ok := plainRequest(req); !ok {
		t.Fatal("the POST of a call goes to Request.Write")
	}
}
