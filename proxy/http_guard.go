package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// DefaultMaxBodyBytes is the request body limit when GuardOptions sets none.
const DefaultMaxBodyBytes = 4 << 20

// GuardOptions configure the HTTP listener's guard. The zero value lets
// only localhost names (localhost, 127.0.0.1, [::1], any port) through as
// Host and Origin and caps bodies at DefaultMaxBodyBytes.
type GuardOptions struct {
	// AllowedHosts are accepted Host header values in addition to the
	// localhost names (localhost, 127.0.0.1, [::1]): "name" accepts any
	// port, "name:port" only that one. Matching ignores case.
	AllowedHosts []string
	// AllowedOrigins are accepted Origin header values in addition to
	// http and https origins on the localhost names, any port. Each is
	// scheme://host[:port] and is matched exactly (ignoring case), as
	// browsers send it: without the scheme's default port.
	AllowedOrigins []string
	// MaxBodyBytes caps a request body; 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
}

// A hostPattern is one allowed Host: a lower-case name (IPv6 without
// brackets) and a port, "" for any.
type hostPattern struct{ name, port string }

// A guard is the compiled GuardOptions.
type guard struct {
	next    http.Handler
	hosts   []hostPattern
	origins map[string]bool // lower-case scheme://host[:port]
	maxBody int64
}

// newGuard wraps next with the HTTP listener's defences, applied in this
// order before any MCP processing: a Host outside the allowlist gets 403
// (DNS rebinding: a page whose domain resolves to 127.0.0.1 still sends its
// own name as Host), an Origin outside it gets 403 (a page on another site;
// a request without Origin, as non-browser clients send, passes), a missing
// or unknown bearer token gets 401 (id; the zero Identity asks for none),
// and a body over the limit gets 413. The allowlist applies whatever
// address the listener is bound to. An entry that cannot be parsed is an
// error. The handler is safe for concurrent use.
func newGuard(o GuardOptions, id Identity, next http.Handler) (http.Handler, error) {
	g := &guard{
		next:    next,
		origins: make(map[string]bool, len(o.AllowedOrigins)),
		maxBody: o.MaxBodyBytes,
	}
	if g.maxBody <= 0 {
		g.maxBody = DefaultMaxBodyBytes
	}
	var errs []error
	for _, h := range o.AllowedHosts {
		p, err := parseHostPattern(h)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		g.hosts = append(g.hosts, p)
	}
	for _, origin := range o.AllowedOrigins {
		norm, err := normalizeOrigin(origin)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		g.origins[norm] = true
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	authenticated := id.authenticate(http.HandlerFunc(g.limitBody))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.checkHostAndOrigin(w, r, authenticated)
	}), nil
}

// checkHostAndOrigin refuses a request whose Host or Origin is not allowed.
func (g *guard) checkHostAndOrigin(w http.ResponseWriter, r *http.Request, next http.Handler) {
	if !g.hostAllowed(r.Host) {
		http.Error(w, fmt.Sprintf("Forbidden: Host %q is not allowed (http.allowed_hosts)", r.Host), http.StatusForbidden)
		return
	}
	if origin := r.Header.Values("Origin"); len(origin) > 0 && (len(origin) > 1 || !g.originAllowed(origin[0])) {
		http.Error(w, fmt.Sprintf("Forbidden: Origin %q is not allowed (http.allowed_origins)", strings.Join(origin, ", ")), http.StatusForbidden)
		return
	}
	next.ServeHTTP(w, r)
}

// limitBody refuses a body larger than the limit and otherwise reads it
// whole, so the handler after it sees a body already in memory.
func (g *guard) limitBody(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength > g.maxBody {
		tooLarge(w, g.maxBody)
		return
	}
	if r.Body != nil && r.Body != http.NoBody {
		body, err := readBody(http.MaxBytesReader(w, r.Body, g.maxBody), r.ContentLength)
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			tooLarge(w, g.maxBody)
			return
		case err != nil:
			http.Error(w, "reading request body: "+err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = newBufferedBody(body)
		r.ContentLength = int64(len(body))
	}
	g.next.ServeHTTP(w, r)
}

// readBody reads r whole into a buffer of the announced size, when there
// is one, instead of growing it (and copying) as io.ReadAll does.
func readBody(r io.Reader, size int64) ([]byte, error) {
	if size <= 0 {
		return io.ReadAll(r)
	}
	var buf bytes.Buffer
	buf.Grow(int(size) + bytes.MinRead) // ReadFrom wants MinRead free to see EOF
	_, err := buf.ReadFrom(r)
	return buf.Bytes(), err
}

// A bufferedBody is a request body the guard has read whole; the handlers
// after it reach its bytes without reading (and copying) them.
type bufferedBody struct {
	*bytes.Reader
	b []byte
}

func newBufferedBody(b []byte) *bufferedBody { return &bufferedBody{Reader: bytes.NewReader(b), b: b} }

func (*bufferedBody) Close() error { return nil }

func tooLarge(w http.ResponseWriter, limit int64) {
	w.Header().Set("Connection", "close")
	http.Error(w, fmt.Sprintf("request body larger than %d bytes (http.max_body_bytes)", limit), http.StatusRequestEntityTooLarge)
}

// hostAllowed reports whether a Host header value is a localhost name or
// matches an allowed host.
func (g *guard) hostAllowed(hostport string) bool {
	if hostport == "" {
		return false
	}
	name, port, err := splitHost(hostport)
	if err != nil {
		return false
	}
	if isLocalhostName(name) {
		return true
	}
	for _, p := range g.hosts {
		if p.name == name && (p.port == "" || p.port == port) {
			return true
		}
	}
	return false
}

// originAllowed reports whether an Origin header value is an http(s)
// origin on a localhost name or an allowed origin. "null" (sandboxed
// frames, file: pages) is never allowed.
func (g *guard) originAllowed(origin string) bool {
	norm, err := normalizeOrigin(origin)
	if err != nil {
		return false
	}
	if g.origins[norm] {
		return true
	}
	u, _ := url.Parse(norm)
	name, _, err := splitHost(u.Host)
	return err == nil && isLocalhostName(name)
}

// normalizeOrigin checks that origin is scheme://host[:port] with an http
// or https scheme and returns it in lower case.
func normalizeOrigin(origin string) (string, error) {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", fmt.Errorf("allowed origin %q: want scheme://host[:port] with scheme http or https", origin)
	}
	if _, _, err := splitHost(u.Host); err != nil {
		return "", fmt.Errorf("allowed origin %q: %w", origin, err)
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), nil
}

func parseHostPattern(h string) (hostPattern, error) {
	if h == "" || strings.ContainsAny(h, "/ @?#*") {
		return hostPattern{}, fmt.Errorf("allowed host %q: want a name or name:port", h)
	}
	name, port, err := splitHost(h)
	if err != nil {
		return hostPattern{}, fmt.Errorf("allowed host %q: %w", h, err)
	}
	return hostPattern{name: name, port: port}, nil
}

// splitHost splits "name", "name:port", "[v6]" or "[v6]:port" into a
// lower-case name without brackets or trailing dot and a port ("" if none).
func splitHost(hostport string) (name, port string, err error) {
	hasPort := false
	switch {
	case strings.HasPrefix(hostport, "["):
		end := strings.IndexByte(hostport, ']')
		if end < 0 {
			return "", "", fmt.Errorf("unclosed [ in %q", hostport)
		}
		name = hostport[1:end]
		if _, err := netip.ParseAddr(name); err != nil || !strings.Contains(name, ":") {
			return "", "", fmt.Errorf("bad IPv6 address in %q", hostport)
		}
		if rest := hostport[end+1:]; rest != "" {
			if port, hasPort = strings.CutPrefix(rest, ":"); !hasPort {
				return "", "", fmt.Errorf("junk after ] in %q", hostport)
			}
		}
	case strings.Count(hostport, ":") > 1:
		return "", "", fmt.Errorf("IPv6 address %q needs brackets", hostport)
	default:
		name, port, hasPort = strings.Cut(hostport, ":")
	}
	if hasPort && (port == "" || strings.Trim(port, "0123456789") != "") {
		return "", "", fmt.Errorf("bad port in %q", hostport)
	}
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	if name == "" {
		return "", "", fmt.Errorf("empty host in %q", hostport)
	}
	return name, port, nil
}

// isLocalhostName reports whether name (as splitHost returns it) is one of
// the localhost names: localhost, 127.0.0.1 or ::1. Other loopback
// addresses are allowed only when listed, so the default list stays small
// and obvious.
func isLocalhostName(name string) bool {
	if name == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(name)
	return err == nil && (ip == netip.MustParseAddr("127.0.0.1") || ip == netip.IPv6Loopback())
}
