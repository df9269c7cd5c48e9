package proxy

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"
)

type profileKey struct{}

// ContextWithProfile returns ctx carrying the client profile a request was
// authenticated as.
func ContextWithProfile(ctx context.Context, profile string) context.Context {
	return context.WithValue(ctx, profileKey{}, profile)
}

// profileOf is the profile a call runs under: the one its request was
// authenticated as, else the server's default (serve --profile).
func (s *Server) profileOf(ctx context.Context) string {
	if p, ok := ctx.Value(profileKey{}).(string); ok {
		return p
	}
	return s.profile
}

// An Identity says which bearer tokens the HTTP listener accepts. The zero
// value accepts every request, without a profile (a loopback listener
// without auth).
type Identity struct {
	// Token, when set, is accepted and gives no profile: the global and
	// server policies alone apply.
	Token string
	// Profiles maps the hex SHA-256 of a token to the profile it selects.
	Profiles map[string]string
}

func (id Identity) open() bool { return id.Token == "" && len(id.Profiles) == 0 }

// authenticate refuses, with 401 and before any MCP processing, a request
// whose bearer token is missing or unknown, and puts the profile its token
// selects in the request's context. Tokens are compared in constant time;
// profile tokens are looked up by their SHA-256, which reveals nothing
// about a token through timing.
func (id Identity) authenticate(next http.Handler) http.Handler {
	if id.open() {
		return next
	}
	global := []byte(id.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if ok && got != "" {
			if len(global) > 0 && subtle.ConstantTimeCompare([]byte(got), global) == 1 {
				next.ServeHTTP(w, r)
				return
			}
			sum := sha256.Sum256([]byte(got))
			if profile, found := id.Profiles[hex.EncodeToString(sum[:])]; found {
				next.ServeHTTP(w, r.WithContext(ContextWithProfile(r.Context(), profile)))
				return
			}
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="mcpwarden"`)
		http.Error(w, "missing or wrong bearer token", http.StatusUnauthorized)
	})
}

// httpContext carries the authenticated profile from the HTTP request into
// the MCP request's context.
func httpContext(ctx context.Context, r *http.Request) context.Context {
	if p, ok := r.Context().Value(profileKey{}).(string); ok {
		return ContextWithProfile(ctx, p)
	}
	return ctx
}
