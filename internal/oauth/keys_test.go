package oauth

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcpwarden/mcpwarden/internal/testop"
)

func TestTokenSignedByRetiredKeyIsRefused(t *testing.T) {
	t.Parallel()
	p := testop.Start(t, nil)
	old := token(t, p, testop.Alice.ID, testop.ClientJWT)
	if err := p.RotateKey(true); err != nil {
		t.Fatal(err)
	}
	v := newVerifier(t, p, nil, nil)
	_, err := v.Verify(t.Context(), old)
	wantRefused(t, err, CodeInvalidToken)
	if _, err := v.Verify(t.Context(), token(t, p, testop.Alice.ID, testop.ClientJWT)); err != nil {
		t.Fatalf("token signed by the new key: %v", err)
	}
}

func TestRetiredKeyStopsVerifyingAfterKeyMaxAge(t *testing.T) {
	t.Parallel()
	p := testop.Start(t, nil)
	clock := newClock()
	v := newVerifier(t, p, &Options{Now: clock.now, KeyMaxAge: time.Minute}, nil)
	old := token(t, p, testop.Alice.ID, testop.ClientJWT)
	if _, err := v.Verify(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	if err := p.RotateKey(true); err != nil {
		t.Fatal(err)
	}
	clock.advance(time.Minute + time.Second)
	_, err := v.Verify(t.Context(), old)
	wantRefused(t, err, CodeInvalidToken)
}

// publicKeyPEM is the PEM of the provider's signing key, as its JWKS
// publishes it.
func publicKeyPEM(t *testing.T, p *testop.Provider) []byte {
	t.Helper()
	resp, err := http.Get(p.KeysURL())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var set jose.JSONWebKeySet
	if err := json.NewDecoder(resp.Body).Decode(&set); err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(set.Keys[0].Key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

func TestHMACKeyedWithThePublicKeyIsRefused(t *testing.T) {
	t.Parallel()
	p := testop.Start(t, nil)
	v := newVerifier(t, p, nil, nil)
	payload := unb64(t, segments(t, token(t, p, testop.Alice.ID, testop.ClientJWT))[1])
	for _, alg := range []jose.SignatureAlgorithm{jose.HS256, jose.HS384, jose.HS512} {
		t.Run(string(alg), func(t *testing.T) {
			t.Parallel()
			signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: publicKeyPEM(t, p)},
				(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "key1"))
			if err != nil {
				t.Fatal(err)
			}
			jws, err := signer.Sign([]byte(payload))
			if err != nil {
				t.Fatal(err)
			}
			forged, err := jws.CompactSerialize()
			if err != nil {
				t.Fatal(err)
			}
			_, err = v.Verify(t.Context(), forged)
			wantRefused(t, err, CodeInvalidToken)
		})
	}
}

// countingTransport counts the requests whose path contains part.
type countingTransport struct {
	part string
	n    atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.Contains(r.URL.Path, c.part) {
		c.n.Add(1)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func TestTokensNamingUnknownKeysDoNotFloodTheIssuer(t *testing.T) {
	t.Parallel()
	p := testop.Start(t, nil)
	keys := &countingTransport{part: "keys"}
	v := newVerifier(t, p, &Options{HTTPClient: &http.Client{Transport: keys}}, nil)
	s := segments(t, token(t, p, testop.Alice.ID, testop.ClientJWT))
	for i := range 20 {
		header := b64(fmt.Sprintf(`{"alg":"RS256","kid":"forged%d","typ":"JWT"}`, i))
		_, err := v.Verify(t.Context(), header+"."+s[1]+"."+s[2])
		wantRefused(t, err, CodeInvalidToken)
	}
	if n := keys.n.Load(); n > 1 {
		t.Errorf("the keys were fetched %d times for 20 tokens naming unknown keys, want at most 1", n)
	}
}

func TestUnreachableIssuerRefusesTokens(t *testing.T) {
	t.Parallel()
	p := testop.Start(t, nil)
	tok := token(t, p, testop.Alice.ID, testop.ClientJWT)
	v, err := New(Config{Issuer: "http://127.0.0.1:1", Audience: testop.Resource}, &Options{HTTPClient: &http.Client{Timeout: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = v.Verify(t.Context(), tok)
	wantRefused(t, err, CodeInvalidToken)
	if !errors.Is(err, errUnavailable) {
		t.Errorf("err = %v, want it to say the issuer could not be reached", err)
	}
}

// switchTransport is a network that can be cut: while down, every request
// fails; it counts the requests made.
type switchTransport struct {
	down atomic.Bool
	n    atomic.Int64
}

func (s *switchTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	s.n.Add(1)
	if s.down.Load() {
		return nil, errors.New("network is down")
	}
	return http.DefaultTransport.RoundTrip(r)
}

func TestIssuerBackAfterAnOutageIsAskedAgain(t *testing.T) {
	t.Parallel()
	p := testop.Start(t, nil)
	net := &switchTransport{}
	net.down.Store(true)
	clock := newClock()
	v := newVerifier(t, p, &Options{HTTPClient: &http.Client{Transport: net}, Now: clock.now}, nil)
	tok := token(t, p, testop.Alice.ID, testop.ClientJWT)
	for range 5 {
		_, err := v.Verify(t.Context(), tok)
		wantRefused(t, err, CodeInvalidToken)
	}
	if n := net.n.Load(); n != 1 {
		t.Errorf("%d requests to the issuer for 5 tokens during an outage, want 1", n)
	}
	net.down.Store(false)
	clock.advance(minRefetch + time.Second)
	if _, err := v.Verify(t.Context(), tok); err != nil {
		t.Fatalf("after the outage: %v", err)
	}
}

func TestKeysPastTheirAgeAreNotUsedWhileTheIssuerIsDown(t *testing.T) {
	t.Parallel()
	p := testop.Start(t, nil)
	net := &switchTransport{}
	clock := newClock()
	v := newVerifier(t, p, &Options{HTTPClient: &http.Client{Transport: net}, Now: clock.now, KeyMaxAge: time.Minute}, nil)
	tok := token(t, p, testop.Alice.ID, testop.ClientJWT)
	if _, err := v.Verify(t.Context(), tok); err != nil {
		t.Fatal(err)
	}
	net.down.Store(true)
	clock.advance(time.Minute + time.Second)
	_, err := v.Verify(t.Context(), tok)
	wantRefused(t, err, CodeInvalidToken)
	if !errors.Is(err, errUnavailable) {
		t.Errorf("err = %v, want it to say the issuer could not be reached", err)
	}
}

func TestConcurrentFirstTokensFetchTheKeysOnce(t *testing.T) {
	t.Parallel()
	p := testop.Start(t, nil)
	keys := &countingTransport{part: "keys"}
	v := newVerifier(t, p, &Options{HTTPClient: &http.Client{Transport: keys}}, nil)
	tok := token(t, p, testop.Alice.ID, testop.ClientJWT)
	errs := make(chan error, 16)
	for range cap(errs) {
		go func() {
			_, err := v.Verify(t.Context(), tok)
			errs <- err
		}()
	}
	for range cap(errs) {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if n := keys.n.Load(); n != 1 {
		t.Errorf("keys fetched %d times, want 1", n)
	}
}

func TestKeyNamedByTheTokenItselfIsNotTrusted(t *testing.T) {
	t.Parallel()
	p := testop.Start(t, nil)
	v := newVerifier(t, p, nil, nil)
	payload := unb64(t, segments(t, token(t, p, testop.Alice.ID, testop.ClientJWT))[1])
	attacker, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	var fetched atomic.Int64
	jku := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetched.Add(1)
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &attacker.PublicKey, KeyID: "key1", Algorithm: "RS256", Use: "sig"}}})
	}))
	t.Cleanup(jku.Close)
	tests := []struct {
		name string
		opts *jose.SignerOptions
	}{
		{"A key embedded in the header (jwk) is not trusted.", (&jose.SignerOptions{EmbedJWK: true}).WithType("JWT")},
		{"A key set the header points at (jku) is not fetched.", (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "key1").WithHeader("jku", jku.URL)},
		{"A certificate URL in the header (x5u) is not fetched.", (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "key1").WithHeader("x5u", jku.URL)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: attacker}, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			jws, err := signer.Sign([]byte(payload))
			if err != nil {
				t.Fatal(err)
			}
			forged, err := jws.CompactSerialize()
			if err != nil {
				t.Fatal(err)
			}
			_, err = v.Verify(t.Context(), forged)
			wantRefused(t, err, CodeInvalidToken)
		})
	}
	if n := fetched.Load(); n != 0 {
		t.Errorf("the URL the token named was fetched %d times", n)
	}
}

func TestClientGoingAwayDoesNotFailTheKeyFetchForOthers(t *testing.T) {
	t.Parallel()
	p := testop.Start(t, nil)
	v := newVerifier(t, p, nil, nil)
	tok := token(t, p, testop.Alice.ID, testop.ClientJWT)
	gone, cancel := context.WithCancel(t.Context())
	cancel()
	_, _ = v.Verify(gone, tok)
	if _, err := v.Verify(t.Context(), tok); err != nil {
		t.Fatalf("after a cancelled first request: %v", err)
	}
}

// stallTransport is an issuer that stops answering: while stalled, a
// request waits until it is released or its context ends. It counts the
// requests waiting.
type stallTransport struct {
	stalled atomic.Bool
	waiting atomic.Int64
	release chan struct{}
}

func (s *stallTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if s.stalled.Load() {
		s.waiting.Add(1)
		defer s.waiting.Add(-1)
		select {
		case <-s.release:
		case <-r.Context().Done():
		}
		return nil, errors.New("the issuer did not answer")
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestUnknownKidFloodDoesNotStallCachedKeys stalls the issuer and sends a
// token naming an unknown key, which starts a fetch that hangs: tokens
// signed with a key already held still verify at once, and further tokens
// naming unknown keys are refused at once rather than queueing behind the
// fetch or starting fetches of their own.
func TestUnknownKidFloodDoesNotStallCachedKeys(t *testing.T) {
	t.Parallel()
	p := testop.Start(t, nil)
	issuer := &stallTransport{release: make(chan struct{})}
	t.Cleanup(func() { close(issuer.release) })
	clock := newClock()
	v := newVerifier(t, p, &Options{HTTPClient: &http.Client{Transport: issuer, Timeout: 5 * time.Second}, Now: clock.now}, nil)
	good := token(t, p, testop.Alice.ID, testop.ClientJWT)
	if _, err := v.Verify(t.Context(), good); err != nil {
		t.Fatal(err)
	}
	issuer.stalled.Store(true)
	clock.advance(minRefetch + time.Second) // the refetch budget allows one
	s := segments(t, good)
	forged := func(i int) string {
		return b64(fmt.Sprintf(`{"alg":"RS256","kid":"forged%d","typ":"JWT"}`, i)) + "." + s[1] + "." + s[2]
	}
	go func() { _, _ = v.Verify(context.WithoutCancel(t.Context()), forged(0)) }()
	deadline := time.Now().Add(10 * time.Second)
	for issuer.waiting.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the token naming an unknown key did not start a key fetch")
		}
		time.Sleep(5 * time.Millisecond)
	}
	const atOnce = 500 * time.Millisecond
	var slowestGood, slowestForged time.Duration
	for i := 1; i <= 20; i++ {
		start := time.Now()
		if _, err := v.Verify(t.Context(), good); err != nil {
			t.Fatalf("a token with a cached key while a fetch hangs: %v", err)
		}
		d := time.Since(start)
		if d > atOnce {
			t.Fatalf("a token with a cached key waited %s behind a fetch for an unknown key", d)
		}
		slowestGood = max(slowestGood, d)
		start = time.Now()
		_, err := v.Verify(t.Context(), forged(i))
		wantRefused(t, err, CodeInvalidToken)
		if d = time.Since(start); d > atOnce {
			t.Fatalf("a token naming an unknown key took %s to be refused while a fetch hangs", d)
		}
		slowestForged = max(slowestForged, d)
	}
	t.Logf("while a key fetch hangs: the slowest of 20 tokens with a cached key verified in %s, the slowest of 20 naming unknown keys refused in %s", slowestGood, slowestForged)
	if n := issuer.waiting.Load(); n != 1 {
		t.Errorf("%d key fetches hang at once, want 1", n)
	}
}

// TestForgedKidTheIssuerLacksIsNotFetchedForAgain is the next variant of
// the flood: one forged kid repeated once the refetch budget allows a
// fetch again. A fetch already showed the issuer lacks it, so it is
// refused without one; a kid not seen before still gets its fetch.
func TestForgedKidTheIssuerLacksIsNotFetchedForAgain(t *testing.T) {
	t.Parallel()
	p := testop.Start(t, nil)
	keys := &countingTransport{part: "keys"}
	clock := newClock()
	v := newVerifier(t, p, &Options{HTTPClient: &http.Client{Transport: keys}, Now: clock.now}, nil)
	s := segments(t, token(t, p, testop.Alice.ID, testop.ClientJWT))
	forged := func(kid string) string {
		return b64(fmt.Sprintf(`{"alg":"RS256","kid":%q,"typ":"JWT"}`, kid)) + "." + s[1] + "." + s[2]
	}
	steps := []struct {
		kid   string
		fetch int64
	}{{"forged", 1}, {"forged", 0}, {"forged", 0}, {"other", 1}}
	for i, step := range steps {
		clock.advance(minRefetch + time.Second)
		before := keys.n.Load()
		_, err := v.Verify(t.Context(), forged(step.kid))
		wantRefused(t, err, CodeInvalidToken)
		if n := keys.n.Load() - before; n != step.fetch {
			t.Errorf("token %d (kid %q) made %d key fetches, want %d", i, step.kid, n, step.fetch)
		}
	}
}
