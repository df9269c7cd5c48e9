// Package httpguard is the HTTP listener's defences, applied before any
// MCP processing: the Host and Origin allowlists (DNS rebinding, other
// sites' pages), the bearer token or OAuth access token that names the
// caller (Identity), and the body limit. It puts the caller's principal
// and profile in the request's context, where proxy reads them.
package httpguard

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcpwarden/mcpwarden/internal/hostport"
	"github.com/mcpwarden/mcpwarden/proxy/wire"
)

// DefaultMaxBodyBytes is the request body limit when Options sets none.
const DefaultMaxBodyBytes = 4 << 20

// Options configure the HTTP listener's guard. The zero value lets
// only localhost names (localhost, 127.0.0.1, [::1], any port) through as
// Host and Origin and caps bodies at DefaultMaxBodyBytes.
type Options struct {
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

// A guard is the compiled Options.
type guard struct {
	next    http.Handler
	hosts   []hostport.Pattern
	origins map[string]bool // lower-case scheme://host[:port]
	maxBody int64
}

// New wraps next with the HTTP listener's defences, applied in this
// order before any MCP processing: a Host outside the allowlist gets 403
// (DNS rebinding: a page whose domain resolves to 127.0.0.1 still sends its
// own name as Host), an Origin outside it gets 403 (a page on another site;
// a request without Origin, as non-browser clients send, passes), a missing
// or unknown bearer token gets 401 (id; the zero Identity asks for none),
// and a body over the limit gets 413. The allowlist applies whatever
// address the listener is bound to. An entry that cannot be parsed is an
// error. The handler is safe for concurrent use.
func New(o Options, id Identity, next http.Handler) (http.Handler, error) {
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
		p, err := hostport.ParsePattern(h)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		g.hosts = append(g.hosts, p)
	}
	for _, origin := range o.AllowedOrigins {
		norm, err := hostport.NormalizeOrigin(origin)
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
		r.Body = wire.NewBody(body)
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

func tooLarge(w http.ResponseWriter, limit int64) {
	w.Header().Set("Connection", "close")
	http.Error(w, fmt.Sprintf("request body larger than %d bytes (http.max_body_bytes)", limit), http.StatusRequestEntityTooLarge)
}

// hostAllowed reports whether a Host header value is a localhost name or
// matches an allowed host.
func (g *guard) hostAllowed(host string) bool {
	if host == "" {
		return false
	}
	name, port, err := hostport.Split(host)
	if err != nil {
		return false
	}
	if hostport.IsLocalhostName(name) {
		return true
	}
	for _, p := range g.hosts {
		if p.Match(name, port) {
			return true
		}
	}
	return false
}

// originAllowed reports whether an Origin header value is an http(s)
// origin on a localhost name or an allowed origin. "null" (sandboxed
// frames, file: pages) is never allowed.
func (g *guard) originAllowed(origin string) bool {
	norm, err := hostport.NormalizeOrigin(origin)
	if err != nil {
		return false
	}
	if g.origins[norm] {
		return true
	}
	u, _ := url.Parse(norm)
	name, _, err := hostport.Split(u.Host)
	return err == nil && hostport.IsLocalhostName(name)
}
