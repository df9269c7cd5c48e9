package oauth

import (
	"context"
	"log/slog"
	"net/http"
)

// A Guard puts OAuth in front of an HTTP handler: a request whose bearer
// token Verifier does not accept is answered with the Challenge (401 or
// 403, pointing at MetadataURL), one whose identity Matcher gives no
// profile with 403, and any other reaches the handler with its identity
// and profile in its context (IdentityFrom). The token itself goes no
// further than Verify: the handler is never given it. Log, when set,
// records each refusal's cause. A Guard is safe for concurrent use.
type Guard struct {
	Verifier    *Verifier
	Matcher     *Matcher
	MetadataURL string
	Log         *slog.Logger
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

// Wrap returns next behind the guard. The Authorization header is removed
// from the request next sees.
func (g Guard) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := g.admit(w, r)
		if !ok {
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), callerKey{}, c))
		r.Header.Del("Authorization")
		next.ServeHTTP(w, r)
	})
}

// admit authenticates r, answering it itself when it is refused.
func (g Guard) admit(w http.ResponseWriter, r *http.Request) (Caller, bool) {
	id, err := g.Authenticate(r)
	if err != nil {
		if g.Log != nil {
			g.Log.LogAttrs(r.Context(), slog.LevelInfo, "oauth token refused", slog.String("remote", r.RemoteAddr), slog.String("error", err.Error()))
		}
		NewChallenge(err, g.MetadataURL, g.Verifier.RequiredScopes()).Write(w)
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
