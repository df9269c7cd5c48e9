package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
)

// allowedAlgs are the signature algorithms a token may use: asymmetric
// ones only, so "none" and an HMAC keyed with a public key never verify.
var allowedAlgs = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512,
	jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512,
	jose.EdDSA,
}

func allowedAlgNames() []string {
	out := make([]string, len(allowedAlgs))
	for i, a := range allowedAlgs {
		out[i] = string(a)
	}
	return out
}

// maxJWKSBytes bounds a key set or discovery document read from the issuer.
const maxJWKSBytes = 1 << 20

// A keySet holds the issuer's public keys. It finds the JWKS URL through
// OpenID discovery when it is not configured, fetches the keys on first
// use, fetches them again when a token names a key it does not hold (the
// issuer rotated; at most once per minRefetch, so a stream of bad tokens
// does not become a stream of fetches) and when they are older than
// maxAge (so a key the issuer withdrew stops being accepted). It is safe
// for concurrent use; one fetch at a time.
type keySet struct {
	issuer     string
	client     *http.Client
	now        func() time.Time
	maxAge     time.Duration
	minRefetch time.Duration

	mu      sync.Mutex
	jwksURL string
	keys    []jose.JSONWebKey
	fetched time.Time // when keys were fetched; zero: never
	tried   time.Time // when a fetch was last tried; zero: never
	lastErr error     // why the last fetch failed; nil if it did not
}

var _ oidc.KeySet = (*keySet)(nil)

// errUnavailable marks a failure to reach the issuer, as opposed to a bad
// token: the request is refused all the same, but the log says whose fault.
var errUnavailable = errors.New("the issuer could not be reached")

// VerifySignature checks the JWS's signature against the issuer's key it
// names and returns the payload.
func (k *keySet) VerifySignature(ctx context.Context, raw string) ([]byte, error) {
	jws, err := jose.ParseSigned(raw, allowedAlgs)
	if err != nil {
		return nil, fmt.Errorf("parsing the token: %w", err)
	}
	if len(jws.Signatures) != 1 {
		return nil, errors.New("the token has not exactly one signature")
	}
	kid := jws.Signatures[0].Header.KeyID
	keys, err := k.keysFor(ctx, kid)
	if err != nil {
		reportFetchError(ctx, err)
		return nil, err
	}
	for _, key := range keys {
		if kid != "" && key.KeyID != kid {
			continue
		}
		if key.Use != "" && key.Use != "sig" {
			continue
		}
		if key.Algorithm != "" && key.Algorithm != jws.Signatures[0].Header.Algorithm {
			continue
		}
		if payload, err := jws.Verify(&key); err == nil {
			return payload, nil
		}
	}
	return nil, fmt.Errorf("no key of the issuer verifies the signature (kid %q)", kid)
}

// keysFor returns the keys to try for a token naming kid, fetching them
// when none are held, they are too old, or kid is new to them, but not
// within minRefetch of the last attempt, successful or not: while the
// issuer is down, requests are refused at once instead of each waiting on
// a fetch of its own.
func (k *keySet) keysFor(ctx context.Context, kid string) ([]jose.JSONWebKey, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.now()
	stale := k.fetched.IsZero() || now.Sub(k.fetched) > k.maxAge
	unknown := kid != "" && !hasKey(k.keys, kid)
	if !stale && !unknown {
		return k.keys, nil
	}
	if !k.tried.IsZero() && now.Sub(k.tried) <= k.minRefetch {
		if stale {
			return nil, k.lastErr
		}
		return k.keys, nil
	}
	k.tried = now
	// The fetch serves every request waiting on it, so one client going
	// away must not fail it for all; the HTTP client's timeout bounds it.
	if err := k.fetch(context.WithoutCancel(ctx)); err != nil {
		k.lastErr = err
		if stale {
			k.keys = nil
		}
		return nil, err
	}
	k.fetched, k.lastErr = now, nil
	return k.keys, nil
}

func hasKey(keys []jose.JSONWebKey, kid string) bool {
	for _, key := range keys {
		if key.KeyID == kid {
			return true
		}
	}
	return false
}

// fetch reads the key set, discovering its URL first if need be.
func (k *keySet) fetch(ctx context.Context) error {
	if k.jwksURL == "" {
		p, err := oidc.NewProvider(oidc.ClientContext(ctx, k.client), k.issuer)
		if err != nil {
			return fmt.Errorf("%w: discovering %q: %v", errUnavailable, k.issuer, err)
		}
		var meta struct {
			JWKSURL string `json:"jwks_uri"`
		}
		if err := p.Claims(&meta); err != nil || meta.JWKSURL == "" {
			return fmt.Errorf("%w: the discovery document of %q names no jwks_uri", errUnavailable, k.issuer)
		}
		k.jwksURL = meta.JWKSURL
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := getJSON(ctx, k.client, k.jwksURL, &set); err != nil {
		return fmt.Errorf("%w: fetching keys: %v", errUnavailable, err)
	}
	// A key of a type go-jose does not know is skipped, not fatal: the
	// set may hold keys for other uses.
	k.keys = k.keys[:0:0]
	for _, raw := range set.Keys {
		var key jose.JSONWebKey
		if json.Unmarshal(raw, &key) == nil && key.Valid() && key.IsPublic() {
			k.keys = append(k.keys, key)
		}
	}
	return nil
}

// getJSON decodes the JSON at url, read with client, into v.
func getJSON(ctx context.Context, client *http.Client, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxJWKSBytes)).Decode(v); err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	return nil
}
