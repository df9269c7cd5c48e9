package httpguard

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"
)

// PrincipalOf returns the principal ctx carries (ContextWithPrincipal),
// "" when it carries none.
func PrincipalOf(ctx context.Context) string {
	c, _ := ctx.Value(callerKey{}).(caller)
	return c.principal
}

// ProfileOf returns the profile ctx carries (ContextWithProfile), ok
// false when it carries none; "" is a token that selects no profile.
func ProfileOf(ctx context.Context) (profile string, ok bool) {
	c, _ := ctx.Value(callerKey{}).(caller)
	return c.profile, c.hasProfile
}

// A caller is who sent a request, as the HTTP listener authenticated it.
type caller struct {
	principal string
	profile   string
	// hasProfile distinguishes a token that selects no profile from none.
	hasProfile bool
}

type callerKey struct{}

// ContextWithProfile returns ctx carrying the client profile a request was
// authenticated as. The principal is kept if ctx carries one.
func ContextWithProfile(ctx context.Context, profile string) context.Context {
	c, _ := ctx.Value(callerKey{}).(caller)
	c.profile, c.hasProfile = profile, true
	return context.WithValue(ctx, callerKey{}, c)
}

// ContextWithPrincipal returns ctx carrying the principal (who holds the
// token) a request was authenticated as. The profile is kept if ctx
// carries one.
func ContextWithPrincipal(ctx context.Context, principal string) context.Context {
	c, _ := ctx.Value(callerKey{}).(caller)
	c.principal = principal
	return context.WithValue(ctx, callerKey{}, c)
}

// tokenPrincipal names the holder of a bearer token without revealing it:
// "token:" and the first 16 hex digits of the token's SHA-256.
func tokenPrincipal(sum [sha256.Size]byte) string {
	return "token:" + hex.EncodeToString(sum[:8])
}

// An Identity says which bearer tokens the HTTP listener accepts. The zero
// value accepts every request, without a profile, as proxy.PrincipalAnonymous (a
// loopback listener without auth).
type Identity struct {
	// Token, when set, is accepted and gives no profile: the global and
	// server policies alone apply.
	Token string
	// Profiles maps the hex SHA-256 of a token to the profile it selects.
	Profiles map[string]string
	// OAuth, when set, admits the requests whose token is none of the
	// above by OAuth access token (auth.oauth), and its metadata document
	// is served without authentication.
	OAuth OAuthGuard
}

// An OAuthGuard admits HTTP requests by OAuth access token, as an OAuth
// 2.1 resource server (internal/oauth's Guard is one).
type OAuthGuard interface {
	// AdmitRequest authenticates r and returns its principal and profile
	// ("" for none); a request it refuses it answers itself (401 or 403
	// with a challenge), returning false.
	AdmitRequest(w http.ResponseWriter, r *http.Request) (principal, profile string, ok bool)
	// MetadataPath is where Metadata is served.
	MetadataPath() string
	// Metadata serves the protected resource metadata (RFC 9728).
	Metadata() http.Handler
}

func (id Identity) open() bool { return id.Token == "" && len(id.Profiles) == 0 && id.OAuth == nil }

// authenticate refuses, with 401 and before any MCP processing, a request
// whose bearer token is missing or unknown, and puts the principal and the
// profile its token selects in the request's context. Static tokens are
// compared in constant time; profile tokens are looked up by their
// SHA-256, which reveals nothing about a token through timing. Any other
// token goes to OAuth when it is set, which then answers the refusals. The
// token itself goes no further: the Authorization header is removed from
// every request let through.
func (id Identity) authenticate(next http.Handler) http.Handler {
	if id.open() {
		return next
	}
	global := []byte(id.Token)
	var metadataPath string
	var metadata http.Handler
	if id.OAuth != nil {
		metadataPath, metadata = id.OAuth.MetadataPath(), id.OAuth.Metadata()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if metadata != nil && r.URL.Path == metadataPath {
			metadata.ServeHTTP(w, r)
			return
		}
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if ok && got != "" {
			sum := sha256.Sum256([]byte(got))
			ctx := ContextWithPrincipal(r.Context(), tokenPrincipal(sum))
			if len(global) > 0 && subtle.ConstantTimeCompare([]byte(got), global) == 1 {
				r.Header.Del("Authorization")
				next.ServeHTTP(w, r.WithContext(ctx))
				return
			}
			if profile, found := id.Profiles[hex.EncodeToString(sum[:])]; found {
				r.Header.Del("Authorization")
				next.ServeHTTP(w, r.WithContext(ContextWithProfile(ctx, profile)))
				return
			}
		}
		if id.OAuth != nil {
			principal, profile, ok := id.OAuth.AdmitRequest(w, r)
			if !ok {
				return
			}
			ctx := ContextWithPrincipal(r.Context(), principal)
			if profile != "" {
				ctx = ContextWithProfile(ctx, profile)
			}
			next.ServeHTTP(w, r.WithContext(ctx))
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="mcpwarden"`)
		http.Error(w, "missing or wrong bearer token", http.StatusUnauthorized)
	})
}

// HTTPContext carries the authenticated caller from the HTTP request r
// into ctx, the MCP request's context.
func HTTPContext(ctx context.Context, r *http.Request) context.Context {
	if c, ok := r.Context().Value(callerKey{}).(caller); ok {
		return context.WithValue(ctx, callerKey{}, c)
	}
	return ctx
}
