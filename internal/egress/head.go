package egress

import (
	"bufio"
	"fmt"
	"net/http"
	"net/netip"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"

	"github.com/mcpwarden/mcpwarden/internal/hostport"
)

// A head is a request head the proxy carries: a CONNECT tunnel or an
// absolute-form HTTP request (http holds it; its body is still unread).
type head struct {
	kind Kind
	req  Request
	http *http.Request
}

// A headError is a head the proxy refuses to carry, with the status it
// answers and a message telling the client what to send instead.
type headError struct {
	status int
	msg    string
}

func (e *headError) Error() string { return e.msg }

func badRequest(format string, args ...any) *headError {
	return &headError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

// readHead reads one request head from br and checks that it is one the
// proxy carries: `CONNECT host:port` (authority form, nothing else) or an
// absolute-form `http://host[:port]/…` request. The host is normalised as
// hostport.NormalizeHost does; the Request returned is what the Decider is
// asked about and what is dialled, and for a forwarded request the only
// Host the upstream is sent.
func readHead(br *bufio.Reader) (head, error) {
	in, err := http.ReadRequest(br)
	if err != nil {
		return head{}, badRequest("unreadable request head: %v; send CONNECT host:port or an absolute-form request (GET http://host/path)", err)
	}
	if in.Method == http.MethodConnect {
		r, err := parseAuthority(in.RequestURI, 0)
		if err != nil {
			return head{}, badRequest("CONNECT target %q: %v; send CONNECT host:port", in.RequestURI, err)
		}
		return head{kind: KindTunnel, req: r}, nil
	}
	u := in.URL
	switch {
	case in.ProtoMajor != 1:
		return head{}, badRequest("protocol %s: this proxy speaks HTTP/1.x", in.Proto)
	case u.Host == "" && !strings.HasPrefix(in.RequestURI, "http://"):
		if u.Scheme != "" && u.Scheme != "http" {
			return head{}, badRequest("scheme %q: send CONNECT host:port for it (HTTPS goes through CONNECT)", u.Scheme)
		}
		return head{}, badRequest("%q is not an absolute URL: this is a proxy; send GET http://host/path, or CONNECT host:port", in.RequestURI)
	case u.Scheme != "http":
		return head{}, badRequest("scheme %q: send CONNECT host:port for it (HTTPS goes through CONNECT)", u.Scheme)
	case u.User != nil:
		return head{}, badRequest("user info in %q is not forwarded: send credentials in an Authorization header", in.RequestURI)
	}
	r, err := parseAuthority(u.Host, 80)
	if err != nil {
		return head{}, badRequest("host %q: %v", u.Host, err)
	}
	return head{kind: KindForward, req: r, http: in}, nil
}

// parseAuthority parses host:port (IPv6 in brackets) into a normalised
// Request. A missing port is defPort, or an error when defPort is 0.
func parseAuthority(s string, defPort uint16) (Request, error) {
	for i := range len(s) {
		if c := s[i]; c <= ' ' || c >= 0x7f || strings.IndexByte("%@/?#\\", c) >= 0 {
			return Request{}, fmt.Errorf("character %q not allowed in a host (write IDNA names as xn--…)", c)
		}
	}
	name, portText, err := hostport.Split(s)
	if err != nil {
		return Request{}, err
	}
	port := defPort
	if portText != "" {
		n, err := strconv.ParseUint(portText, 10, 16)
		if err != nil {
			return Request{}, fmt.Errorf("bad port %q", portText)
		}
		port = uint16(n)
	}
	if port == 0 {
		return Request{}, fmt.Errorf("no port (or port 0): write host:port")
	}
	host, ok := hostport.NormalizeHost(name)
	if !ok {
		return Request{}, fmt.Errorf("%q is not a host name or address", name)
	}
	if _, err := netip.ParseAddr(host); err != nil {
		if err := checkName(host); err != nil {
			return Request{}, err
		}
	}
	return Request{Host: host, Port: port}, nil
}

// checkName checks a normalised name that is not an address: at most 253
// characters in labels of 1 to 63 letters, digits, '-' or '_', the last
// not a number (1.2.3.300 or 0x1g would be an address no resolver agrees
// on).
func checkName(host string) error {
	if len(host) > 253 {
		return fmt.Errorf("name %.40q… is longer than 253 characters", host)
	}
	labels := strings.Split(host, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return fmt.Errorf("name %q has an empty label or one longer than 63 characters", host)
		}
		for i := range len(l) {
			c := l[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("name %q has character %q", host, c)
			}
		}
	}
	last := labels[len(labels)-1]
	if strings.Trim(last, "0123456789") == "" || (strings.HasPrefix(last, "0x") && strings.Trim(last[2:], "0123456789abcdef") == "") {
		return fmt.Errorf("name %q ends in a number but is not an IPv4 address", host)
	}
	return nil
}

// authority returns r as host[:port] for a Host header: IPv6 in brackets,
// the port left out when it is defPort.
func (r Request) authority(defPort uint16) string {
	h := r.Host
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	if r.Port == defPort {
		return h
	}
	return h + ":" + strconv.Itoa(int(r.Port))
}

// String returns r as host:port, IPv6 in brackets.
func (r Request) String() string { return r.authority(0) }

// hopHeaders are removed from a forwarded request and its response, with
// every header the Connection header names: they describe one hop, and
// Proxy-Authorization is the client's credential for this proxy, never the
// upstream's.
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade", "Expect",
}

// removeHopHeaders deletes hop-by-hop headers from h.
func removeHopHeaders(h http.Header) {
	for _, v := range h["Connection"] {
		for _, name := range strings.Split(v, ",") {
			if name = textproto.TrimString(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

// outbound returns the request sent upstream for a forwarded head: origin
// form, Host the decided host (never the client's Host header: that would
// let a request decided for one host be served by another on the same
// address), hop-by-hop headers and Proxy-Authorization removed, and
// Connection: close (one request per connection).
func outbound(h head) *http.Request {
	in := h.http
	hdr := in.Header.Clone()
	removeHopHeaders(hdr)
	hdr.Del("Host")
	if _, ok := hdr["User-Agent"]; !ok {
		hdr["User-Agent"] = []string{""} // keep Request.Write from adding its own
	}
	return &http.Request{
		Method:           in.Method,
		URL:              &url.URL{Path: in.URL.Path, RawPath: in.URL.RawPath, RawQuery: in.URL.RawQuery},
		Proto:            "HTTP/1.1",
		ProtoMajor:       1,
		ProtoMinor:       1,
		Header:           hdr,
		Body:             in.Body,
		ContentLength:    in.ContentLength,
		TransferEncoding: in.TransferEncoding,
		Close:            true,
		Host:             h.req.authority(80),
	}
}
