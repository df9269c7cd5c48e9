package oauth

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
)

// Defaults of Options.
const (
	DefaultLeeway     = 30 * time.Second
	DefaultKeyMaxAge  = 15 * time.Minute
	DefaultHTTPTimout = 10 * time.Second
	// minRefetch spaces out key fetches caused by tokens naming unknown keys.
	minRefetch = 10 * time.Second
)

// Options tunes a Verifier. The zero value is ready to use.
type Options struct {
	// HTTPClient reaches the issuer (discovery, keys, introspection); nil
	// means a client with a DefaultHTTPTimout timeout.
	HTTPClient *http.Client
	// Now is the clock expiry is checked against; nil means time.Now.
	Now func() time.Time
	// Leeway is the clock skew allowed on exp and nbf; 0 means
	// DefaultLeeway.
	Leeway time.Duration
	// KeyMaxAge is how long the issuer's keys are used before they are
	// fetched again, so a withdrawn key stops verifying; 0 means
	// DefaultKeyMaxAge.
	KeyMaxAge time.Duration
	// Getenv reads the introspection client's secret; nil means os.Getenv.
	Getenv func(string) string
	// CacheSize bounds the introspection answers kept; 0 means
	// DefaultCacheSize.
	CacheSize int
}

// A Verifier turns bearer tokens into identities for one Config. It is
// built once, when the config is loaded; New does no I/O: the issuer is
// first asked (discovery, keys) when a token arrives, and asked again
// after a failure. It is safe for concurrent use.
type Verifier struct {
	cfg    Config
	claims ClaimNames
	now    func() time.Time
	leeway time.Duration
	keys   *keySet
	jwt    *oidc.IDTokenVerifier
	opaque *introspector // nil: opaque tokens are refused
}

// New checks cfg and builds its Verifier. An introspection client secret
// that is not set is an error naming its variable.
func New(cfg Config, opts *Options) (*Verifier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opts == nil {
		opts = &Options{}
	}
	client := opts.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: DefaultHTTPTimout}
	}
	v := &Verifier{
		cfg:    cfg,
		claims: cfg.Claims.withDefaults(),
		now:    opts.Now,
		leeway: cmp.Or(opts.Leeway, DefaultLeeway),
	}
	if v.now == nil {
		v.now = time.Now
	}
	v.keys = &keySet{
		issuer: cfg.Issuer, jwksURL: cfg.JWKSURL, client: client, now: v.now,
		maxAge: cmp.Or(opts.KeyMaxAge, DefaultKeyMaxAge),
	}
	v.keys.minRefetch = min(minRefetch, v.keys.maxAge)
	v.jwt = oidc.NewVerifier(cfg.Issuer, v.keys, &oidc.Config{
		ClientID:             cfg.Audience,
		SupportedSigningAlgs: allowedAlgNames(),
		// Expiry and nbf are checked by Verify, on v.now with leeway.
		SkipExpiryCheck: true,
	})
	if in := cfg.Introspection; in != nil {
		getenv := opts.Getenv
		if getenv == nil {
			getenv = os.Getenv
		}
		secret := getenv(in.ClientSecretEnv)
		if secret == "" {
			return nil, fmt.Errorf(keyPrefix+"introspection.client_secret_env: environment variable %s is empty or not set", in.ClientSecretEnv)
		}
		// The token and the secret are sent to the configured URL only:
		// a redirect is a failure, not a second destination.
		noRedirect := *client
		noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		v.opaque = &introspector{
			url: in.URL, clientID: in.ClientID, secret: secret, client: &noRedirect,
			cache: newTokenCache(cmp.Or(opts.CacheSize, DefaultCacheSize)),
		}
	}
	return v, nil
}

// Verify checks a bearer token and returns whom it speaks for. A refusal
// is an *Error whose Code says how to answer (see NewChallenge). A token
// shaped as a JWT is verified against the issuer's keys: signature (by an
// asymmetric algorithm), iss, aud containing the audience, exp and nbf
// with leeway. Any other token is introspected if introspection is
// configured, refused if not. Then the required scopes are checked.
func (v *Verifier) Verify(ctx context.Context, token string) (Identity, error) {
	if !b64token(token) {
		return Identity{}, invalidToken("the bearer token is not a b64token (RFC 6750 §2.1)", nil)
	}
	var (
		id  Identity
		err error
	)
	switch {
	case strings.Count(token, ".") == 2:
		id, err = v.verifyJWT(ctx, token)
	case v.opaque != nil:
		id, err = v.introspect(ctx, token)
	default:
		err = invalidToken("the token is not a JWT and this resource does not introspect tokens", nil)
	}
	if err != nil {
		return Identity{}, err
	}
	if missing := v.missingScopes(id.Scopes); len(missing) > 0 {
		return Identity{}, &Error{Code: CodeInsufficientScope, Description: "the token lacks scope " + strings.Join(missing, " ") + ": get a token with it"}
	}
	return id, nil
}

func (v *Verifier) missingScopes(have []string) []string {
	var missing []string
	for _, s := range v.cfg.RequiredScopes {
		if !slices.Contains(have, s) {
			missing = append(missing, s)
		}
	}
	return missing
}

// RequiredScopes are the scopes every token must grant, for the challenge
// and the resource metadata.
func (v *Verifier) RequiredScopes() []string { return slices.Clone(v.cfg.RequiredScopes) }

// verifyJWT checks a JWT access token and reads its identity.
func (v *Verifier) verifyJWT(ctx context.Context, token string) (Identity, error) {
	var fetchErr error
	idt, err := v.jwt.Verify(withFetchError(ctx, &fetchErr), token)
	if err != nil {
		if fetchErr != nil {
			return Identity{}, invalidToken("the token could not be checked: the issuer's keys are unavailable; try again later", fetchErr)
		}
		return Identity{}, invalidToken("the token is not valid here (signature, issuer or audience): get a new one from the issuer for this resource", err)
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return Identity{}, invalidToken("the token's claims are not a JSON object", err)
	}
	if err := checkAccessToken(token, claims); err != nil {
		return Identity{}, err
	}
	return v.identity(claims)
}

// identity checks the time claims of verified claims and reads the
// identity from them.
func (v *Verifier) identity(claims map[string]any) (Identity, error) {
	now := v.now()
	exp, ok := numericDate(claims["exp"])
	if !ok {
		return Identity{}, invalidToken("the token has no expiry (exp): get one that has", nil)
	}
	if now.After(exp.Add(v.leeway)) {
		return Identity{}, invalidToken("the token has expired: get a new one", nil)
	}
	if raw, present := claims["nbf"]; present {
		nbf, ok := numericDate(raw)
		if !ok {
			return Identity{}, invalidToken("the token's nbf is not a date", nil)
		}
		if now.Add(v.leeway).Before(nbf) {
			return Identity{}, invalidToken("the token is not valid yet (nbf)", nil)
		}
	}
	sub, _ := claims[v.claims.Subject].(string)
	if sub == "" || len(sub) > 255 || !printableUTF8(sub) {
		return Identity{}, invalidToken("the token names no usable subject", nil)
	}
	id := Identity{Issuer: v.cfg.Issuer, Subject: sub, Expiry: exp}
	if email, _ := claims[v.claims.Email].(string); email != "" && printableUTF8(email) && !isFalse(claims["email_verified"]) {
		id.Email = email
	}
	id.Groups = stringList(claims[v.claims.Groups])
	id.Scopes = scopes(claims)
	return id, nil
}

// errFetchKey carries, in a context, where the key set reports a failure
// to reach the issuer (go-oidc keeps only the text of its errors).
type errFetchKey struct{}

func withFetchError(ctx context.Context, dst *error) context.Context {
	return context.WithValue(ctx, errFetchKey{}, dst)
}

func reportFetchError(ctx context.Context, err error) {
	if dst, ok := ctx.Value(errFetchKey{}).(*error); ok && errors.Is(err, errUnavailable) {
		*dst = err
	}
}
