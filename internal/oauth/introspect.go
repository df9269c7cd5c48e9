package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// DefaultCacheSize bounds the introspection answers a Verifier keeps.
const DefaultCacheSize = 4096

// maxIntrospectionTTL bounds how long an introspection answer is trusted
// without asking again, so a revoked token stops working within it.
const maxIntrospectionTTL = 5 * time.Minute

// An introspector asks the issuer about opaque tokens (RFC 7662).
type introspector struct {
	url, clientID, secret string
	client                *http.Client
	cache                 *tokenCache
}

// introspect returns the identity of an opaque token: from the cache while
// its answer is fresh, else from the issuer's introspection endpoint. The
// answer must say active, name this issuer (if it names one) and this
// audience.
func (v *Verifier) introspect(ctx context.Context, token string) (Identity, error) {
	key := sha256.Sum256([]byte(token))
	now := v.now()
	if id, ok := v.opaque.cache.get(key, now); ok {
		return id, nil
	}
	claims, err := v.opaque.ask(ctx, token)
	if err != nil {
		return Identity{}, invalidToken("the token could not be checked: the issuer's introspection endpoint failed; try again later", err)
	}
	if active, _ := claims["active"].(bool); !active {
		return Identity{}, invalidToken("the token is not active: get a new one", nil)
	}
	if iss, present := claims["iss"]; present && iss != v.cfg.Issuer {
		return Identity{}, invalidToken("the token was issued by another issuer", nil)
	}
	if !slices.Contains(stringList(claims["aud"]), v.cfg.Audience) {
		return Identity{}, invalidToken("the token is not meant for this resource (aud): get one for it", nil)
	}
	id, err := v.identity(claims)
	if err != nil {
		return Identity{}, err
	}
	until := now.Add(maxIntrospectionTTL)
	if id.Expiry.Before(until) {
		until = id.Expiry
	}
	v.opaque.cache.put(key, id, until, now)
	return id, nil
}

// ask posts the token to the introspection endpoint, authenticated with
// HTTP Basic (RFC 7662 §2.1, the parts form-encoded as RFC 6749 §2.3.1
// has it), and returns the answer's members.
func (in *introspector) ask(ctx context.Context, token string) (map[string]any, error) {
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.url, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(in.clientID), url.QueryEscape(in.secret))
	resp, err := in.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("introspecting at %s: %w", in.url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("introspecting at %s: %s", in.url, resp.Status)
	}
	dec := json.NewDecoder(io.LimitReader(resp.Body, maxJWKSBytes))
	dec.UseNumber()
	var claims map[string]any
	if err := dec.Decode(&claims); err != nil {
		return nil, fmt.Errorf("introspecting at %s: %w", in.url, err)
	}
	return claims, nil
}

// A tokenCache keeps identities by token digest until a deadline, at most
// size of them: when full, expired entries go first, then the one due to
// expire soonest. It is safe for concurrent use.
type tokenCache struct {
	size int

	mu      sync.Mutex
	entries map[[sha256.Size]byte]cached
}

type cached struct {
	id    Identity
	until time.Time
}

func newTokenCache(size int) *tokenCache {
	return &tokenCache{size: size, entries: map[[sha256.Size]byte]cached{}}
}

func (c *tokenCache) get(key [sha256.Size]byte, now time.Time) (Identity, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok {
		return Identity{}, false
	}
	if !now.Before(e.until) {
		delete(c.entries, key)
		return Identity{}, false
	}
	return e.id, true
}

func (c *tokenCache) put(key [sha256.Size]byte, id Identity, until, now time.Time) {
	if !now.Before(until) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[key]; !ok && len(c.entries) >= c.size {
		c.evict(now)
	}
	c.entries[key] = cached{id: id, until: until}
}

// evict makes room for one entry.
func (c *tokenCache) evict(now time.Time) {
	var (
		soonest [sha256.Size]byte
		first   = true
		at      time.Time
	)
	for k, e := range c.entries {
		if !now.Before(e.until) {
			delete(c.entries, k)
			continue
		}
		if first || e.until.Before(at) {
			soonest, at, first = k, e.until, false
		}
	}
	if len(c.entries) >= c.size && !first {
		delete(c.entries, soonest)
	}
}
