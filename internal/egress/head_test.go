package egress

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestParseAuthority(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		want     Request
		ok       bool
	}{
		{"a name in mixed case with a trailing dot", "API.Example.COM.:443", Request{"api.example.com", 443}, true},
		{"an IDNA name", "xn--bcher-kva.example:443", Request{"xn--bcher-kva.example", 443}, true},
		{"an octal address", "0177.0.0.1:80", Request{"127.0.0.1", 80}, true},
		{"a mapped IPv6 address", "[::ffff:a9fe:a9fe]:80", Request{"169.254.169.254", 80}, true},
		{"an IPv6 address in its long form", "[2001:DB8:0:0:0:0:0:1]:8443", Request{"2001:db8::1", 8443}, true},
		{"a port with leading zeros", "example.com:0443", Request{"example.com", 443}, true},
		{"an underscore", "_acme.example.com:443", Request{"_acme.example.com", 443}, true},
		{"no port", "example.com", Request{}, false},
		{"an empty label", "a..b:443", Request{}, false},
		{"a space", "a b:443", Request{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseAuthority(tt.in, 0)
			if got != tt.want || (err == nil) != tt.ok {
				t.Errorf("parseAuthority(%q) = %+v, %v; want %+v, ok %t", tt.in, got, err, tt.want, tt.ok)
			}
		})
	}
}

// FuzzRequestHead checks the request head reader on arbitrary bytes: it
// never panics; what it decides is normalised (reading its own text back
// gives it again); and a forwarded request goes upstream as exactly one
// origin-form request whose Host is the host decided, without the
// client's proxy credentials or hop-by-hop headers.
func FuzzRequestHead(f *testing.F) {
	for _, s := range []string{
		"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
		"CONNECT [::ffff:127.0.0.1]:80 HTTP/1.1\r\n\r\n",
		"GET http://example.com/a?b HTTP/1.1\r\nHost: evil.test\r\nProxy-Authorization: Basic eA==\r\nConnection: x-a\r\nX-A: 1\r\n\r\n",
		"POST http://0x7f.1:8080/ HTTP/1.1\r\nContent-Length: 3\r\n\r\nabcGET /smuggled HTTP/1.1\r\n\r\n",
		"POST http://example.com/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
		"GET http://user@example.com/ HTTP/1.0\r\n\r\n",
		"GET /origin HTTP/1.1\r\nHost: example.com\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := readHead(bufio.NewReader(bytes.NewReader(b)))
		if err != nil {
			return
		}
		if again, err := parseAuthority(h.req.String(), 0); err != nil || again != h.req {
			t.Fatalf("decided %+v, which reads back as %+v, %v", h.req, again, err)
		}
		if h.kind != KindForward {
			return
		}
		var sent bytes.Buffer
		if err := outbound(h).Write(&sent); err != nil {
			return // a body that ends early
		}
		br := bufio.NewReader(bytes.NewReader(sent.Bytes()))
		up, err := http.ReadRequest(br)
		if err != nil {
			t.Fatalf("the upstream cannot read what is sent: %v\n%q", err, sent.Bytes())
		}
		if want := h.req.authority(80); up.Host != want {
			t.Fatalf("sent Host %q, decided %q\n%q", up.Host, want, sent.Bytes())
		}
		if !strings.HasPrefix(up.RequestURI, "/") {
			t.Fatalf("sent target %q is not origin form", up.RequestURI)
		}
		for _, name := range []string{"Proxy-Authorization", "Proxy-Connection", "Keep-Alive"} {
			if v := up.Header.Values(name); len(v) > 0 {
				t.Fatalf("sent %s: %q", name, v)
			}
		}
		if _, err := io.Copy(io.Discard, up.Body); err != nil {
			t.Fatalf("the upstream cannot read the body sent: %v", err)
		}
		if rest, _ := io.ReadAll(br); len(rest) > 0 {
			t.Fatalf("sent %q after the request: a second request smuggled", rest)
		}
	})
}
