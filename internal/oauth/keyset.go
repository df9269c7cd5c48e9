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
// issuer rotated) and when they are older than maxAge (so a key the issuer
// withdrew stops being accepted). It is safe for concurrent use, and a
// fetch never holds up a token whose key is held:
//
//   - one fetch at a time (single flight), run off the lock; requests that
//     need its outcome (there are no usable keys) wait for it, others not;
//   - a refetch budget: at most one fetch per minRefetch, counted from the
//     end of the last one, successful or not, so a stream of bad tokens
//     or a slow issuer does not become a stream of fetches;
//   - a negative cache: a kid that a fetch made after it was first seen
//     did not hold is refused at once for absentTTL.
//
// A token naming an unknown kid is refused at once while a fetch is in
// flight or the budget is spent; it waits only for a fetch it started.
type keySet struct {
	issuer     string
	client     *http.Client
	now        func() time.Time
	maxAge     time.Duration
	minRefetch time.Duration

	mu       sync.Mutex
	jwksURL  string
	keys     []jose.JSONWebKey
	fetched  time.Time            // when keys were fetched; zero: never
	tried    time.Time            // when the last fetch ended; zero: never
	lastErr  error                // why the last fetch failed; nil if it did not
	inflight *keyFetch            // the fetch in progress, if any
	absent   map[string]time.Time // kids a fetch did not hold, until when they are refused at once
}

// A keyFetch is one fetch of the key set; done is closed when it is over,
// and err is then why it failed, if it did.
type keyFetch struct {
	done chan struct{}
	err  error
}

// Bounds of the negative cache of unknown kids.
const (
	absentTTL = 5 * time.Minute
	maxAbsent = 1024 // past this many, the cache starts over
)

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
// (see keySet) when none are held, they are too old, or kid is new to
// them. The keys it returns may not hold kid: the token is then refused.
func (k *keySet) keysFor(ctx context.Context, kid string) ([]jose.JSONWebKey, error) {
	k.mu.Lock()
	now := k.now()
	stale := k.fetched.IsZero() || now.Sub(k.fetched) > k.maxAge
	unknown := kid != "" && !hasKey(k.keys, kid)
	if !stale && !unknown {
		defer k.mu.Unlock()
		return k.keys, nil
	}
	budgetSpent := !k.tried.IsZero() && now.Sub(k.tried) <= k.minRefetch
	if !stale {
		// Only kid is new: refused at once unless it may start a fetch.
		until, absent := k.absent[kid]
		if (absent && now.Before(until)) || k.inflight != nil || budgetSpent {
			defer k.mu.Unlock()
			return k.keys, nil
		}
	} else if k.inflight == nil && budgetSpent {
		defer k.mu.Unlock()
		return nil, k.lastErr
	}
	f := k.inflight
	if f == nil {
		f = k.startFetchLocked(ctx)
	}
	k.mu.Unlock()

	select {
	case <-f.done:
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the issuer's keys: %w", ctx.Err())
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if f.err != nil && (k.fetched.IsZero() || k.now().Sub(k.fetched) > k.maxAge) {
		return nil, f.err
	}
	if f.err == nil && kid != "" && !hasKey(k.keys, kid) {
		if len(k.absent) >= maxAbsent {
			clear(k.absent)
		}
		if k.absent == nil {
			k.absent = map[string]time.Time{}
		}
		k.absent[kid] = k.now().Add(absentTTL)
	}
	return k.keys, nil
}

// startFetchLocked starts the one fetch of the key set, off the lock. The
// fetch serves every request waiting on it, so one client going away must
// not fail it for all; the HTTP client's timeout bounds it.
func (k *keySet) startFetchLocked(ctx context.Context) *keyFetch {
	f := &keyFetch{done: make(chan struct{})}
	k.inflight = f
	jwksURL := k.jwksURL
	ctx = context.WithoutCancel(ctx)
	go func() {
		defer close(f.done)
		url, keys, err := k.fetch(ctx, jwksURL)
		k.mu.Lock()
		defer k.mu.Unlock()
		now := k.now()
		k.inflight, k.tried, k.jwksURL = nil, now, url
		f.err, k.lastErr = err, err
		switch {
		case err == nil:
			k.keys, k.fetched = keys, now
			clear(k.absent) // a kid the issuer lacked may be one it has now rotated in
		case k.fetched.IsZero() || now.Sub(k.fetched) > k.maxAge:
			k.keys = nil
		}
	}()
	return f
}

func hasKey(keys []jose.JSONWebKey, kid string) bool {
	for _, key := range keys {
		if key.KeyID == kid {
			return true
		}
	}
	return false
}

// fetch reads the key set from jwksURL, discovering it first when it is
// "", and returns the URL and the keys. It touches nothing of k but its
// fixed fields, so it runs off the lock.
func (k *keySet) fetch(ctx context.Context, jwksURL string) (string, []jose.JSONWebKey, error) {
	if jwksURL == "" {
		p, err := oidc.NewProvider(oidc.ClientContext(ctx, k.client), k.issuer)
		if err != nil {
			return "", nil, fmt.Errorf("%w: discovering %q: %v", errUnavailable, k.issuer, err)
		}
		var meta struct {
			JWKSURL string `json:"jwks_uri"`
		}
		if err := p.Claims(&meta); err != nil || meta.JWKSURL == "" {
			return "", nil, fmt.Errorf("%w: the discovery document of %q names no jwks_uri", errUnavailable, k.issuer)
		}
		jwksURL = meta.JWKSURL
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := getJSON(ctx, k.client, jwksURL, &set); err != nil {
		return jwksURL, nil, fmt.Errorf("%w: fetching keys: %v", errUnavailable, err)
	}
	// A key of a type go-jose does not know is skipped, not fatal: the
	// set may hold keys for other uses.
	var keys []jose.JSONWebKey
	for _, raw := range set.Keys {
		var key jose.JSONWebKey
		if json.Unmarshal(raw, &key) == nil && key.Valid() && key.IsPublic() {
			keys = append(keys, key)
		}
	}
	return jwksURL, keys, nil
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
