package oauth

import (
	"context"
	"log/slog"
	"net/http"
)

// A Guard puts OAuth in front of an HTTP handler: a request whose bearer
// token Verifier does not accept is answered with the Challenge (401 or
// 403, pointing at the verifier's MetadataURL), one whose identity Matcher gives no
// profile with 403, and any other reaches the handler with its identity
// and profile in its context (IdentityFrom). The token itself goes no
// further than Verify: the handler is never given it. Log, when set,
// records each refusal's cause. A Guard is safe for concurrent use.
type Guard struct {
	Verifier *Verifier
	Matcher  *Matcher
	Log      *slog.Logger
}

type callerKey struct{}

// A Caller is an authenticated request's identity and the profile it was
// given.
type Caller struct {
	Identity Identity
	Profile  string
}

// CallerFrom returns the caller a Guard admitted the request of ctx as.
func CallerFrom(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok
}

// Wrap returns next behind the guard, with the caller in the context of
// the requests it admits (CallerFrom).
func (g Guard) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := g.Admit(w, r)
		if !ok {
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
	})
}

// Admit authenticates r and returns its caller, removing the
// Authorization header from r so that the token goes no further; a
// request it refuses it answers itself (false). It is Wrap for a listener
// that keeps callers in a context of its own.
func (g Guard) Admit(w http.ResponseWriter, r *http.Request) (Caller, bool) {
	id, err := g.Authenticate(r)
	r.Header.Del("Authorization")
	if err != nil {
		if g.Log != nil {
			g.Log.LogAttrs(r.Context(), slog.LevelInfo, "oauth token refused", slog.String("remote", r.RemoteAddr), slog.String("error", err.Error()))
		}
		NewChallenge(err, g.Verifier.MetadataURL(), g.Verifier.RequiredScopes()).Write(w)
		return Caller{}, false
	}
	profile, ok := g.Matcher.Profile(id)
	if !ok {
		if g.Log != nil {
			g.Log.LogAttrs(r.Context(), slog.LevelInfo, "oauth identity matches no profile", slog.String("principal", id.Principal()))
		}
		http.Error(w, "no profile admits "+id.Principal()+": ask an administrator to add you to one (profiles.<name>.match)", http.StatusForbidden)
		return Caller{}, false
	}
	return Caller{Identity: id, Profile: profile}, true
}

// Authenticate reads the request's bearer token and verifies it.
func (g Guard) Authenticate(r *http.Request) (Identity, error) {
	tok, err := BearerToken(r)
	if err != nil {
		return Identity{}, err
	}
	return g.Verifier.Verify(r.Context(), tok)
}

// AdmitRequest is Admit for a listener that keeps callers in a context of
// its own (proxy/httpguard.Identity's OAuth): the caller's principal and profile
// ("" for none).
func (g Guard) AdmitRequest(w http.ResponseWriter, r *http.Request) (principal, profile string, ok bool) {
	c, ok := g.Admit(w, r)
	if !ok {
		return "", "", false
	}
	return c.Identity.Principal(), c.Profile, true
}

// MetadataPath is the path the listener serves Metadata at.
func (g Guard) MetadataPath() string { return g.Verifier.MetadataPath() }

// Metadata serves the protected resource metadata document (RFC 9728)
// that the challenges of Admit point to.
func (g Guard) Metadata() http.Handler { return MetadataHandler(g.Verifier.Metadata()) }
