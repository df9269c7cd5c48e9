package testop

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// storage is the provider's in-memory state: users, clients, pending
// authorization requests, issued tokens and signing keys. It is safe for
// concurrent use.
type storage struct {
	users    map[string]User
	clients  map[string]Client
	lifetime time.Duration

	mu       sync.Mutex
	requests map[string]*authRequest  // by request ID
	codes    map[string]string        // code → request ID
	tokens   map[string]token         // by token ID
	refresh  map[string]*refreshToken // unspent, by token
	current  signingKey
	keys     []signingKey // published in the JWKS, current included
	nKeys    int
}

var _ op.Storage = (*storage)(nil)

var errNotFound = errors.New("not found")

func newID() string { return rand.Text() }

// setUser marks the authorization request id as logged in by user.
func (s *storage) setUser(id, user string) error {
	if _, ok := s.users[user]; !ok {
		return fmt.Errorf("user %q: %w", user, errNotFound)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.requests[id]
	if !ok {
		return fmt.Errorf("auth request %q: %w", id, errNotFound)
	}
	r.userID, r.authTime = user, time.Now()
	return nil
}

// rotate makes a new key the signing key; the old ones stay published
// unless retire is set.
func (s *storage) rotate(retire bool) error {
	s.mu.Lock()
	n := s.nKeys + 1
	s.mu.Unlock()
	k, err := newSigningKey(n)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nKeys = n
	s.current = k
	if retire {
		s.keys = nil
	}
	s.keys = append(s.keys, k)
	return nil
}

func (s *storage) CreateAuthRequest(_ context.Context, r *oidc.AuthRequest, _ string) (op.AuthRequest, error) {
	c, ok := s.clients[r.ClientID]
	if !ok {
		return nil, fmt.Errorf("client %q: %w", r.ClientID, errNotFound)
	}
	a := &authRequest{
		id: newID(), clientID: r.ClientID, audience: slices.Clone(c.Audience),
		redirectURI: r.RedirectURI, state: r.State, nonce: r.Nonce, scopes: r.Scopes,
		responseTyp: r.ResponseType, responseMod: r.ResponseMode,
	}
	if r.CodeChallenge != "" {
		a.challenge = &oidc.CodeChallenge{Challenge: r.CodeChallenge, Method: r.CodeChallengeMethod}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests[a.id] = a
	return a, nil
}

func (s *storage) AuthRequestByID(_ context.Context, id string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.requests[id]; ok {
		return r, nil
	}
	return nil, fmt.Errorf("auth request %q: %w", id, errNotFound)
}

func (s *storage) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	s.mu.Lock()
	id, ok := s.codes[code]
	s.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("code: %w", errNotFound)
	}
	return s.AuthRequestByID(ctx, id)
}

func (s *storage) SaveAuthCode(_ context.Context, id, code string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.codes[code] = id
	return nil
}

func (s *storage) DeleteAuthRequest(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.requests, id)
	for code, rid := range s.codes {
		if rid == id {
			delete(s.codes, code)
		}
	}
	return nil
}

func (s *storage) CreateAccessToken(_ context.Context, r op.TokenRequest) (string, time.Time, error) {
	t := token{
		id: newID(), subject: r.GetSubject(), audience: r.GetAudience(), scopes: r.GetScopes(),
		expiry: time.Now().Add(s.lifetime),
	}
	if a, ok := r.(op.AuthRequest); ok {
		t.clientID = a.GetClientID()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[t.id] = t
	return t.id, t.expiry, nil
}

// CreateAccessAndRefreshTokens issues an access token and a refresh token
// (for a request with offline_access, or a refresh); the refresh token
// used, if any, is spent.
func (s *storage) CreateAccessAndRefreshTokens(ctx context.Context, r op.TokenRequest, current string) (string, string, time.Time, error) {
	access, expiry, err := s.CreateAccessToken(ctx, r)
	if err != nil {
		return "", "", time.Time{}, err
	}
	rt := &refreshToken{
		id: newID(), subject: r.GetSubject(), audience: r.GetAudience(), scopes: r.GetScopes(), authTime: time.Now(),
	}
	switch req := r.(type) {
	case op.AuthRequest:
		rt.clientID, rt.authTime = req.GetClientID(), req.GetAuthTime()
	case op.RefreshTokenRequest:
		rt.clientID, rt.authTime = req.GetClientID(), req.GetAuthTime()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if current != "" {
		if _, ok := s.refresh[current]; !ok {
			return "", "", time.Time{}, op.ErrInvalidRefreshToken
		}
		delete(s.refresh, current)
	}
	s.refresh[rt.id] = rt
	return access, rt.id, expiry, nil
}

// TokenRequestByRefreshToken finds an unspent refresh token.
func (s *storage) TokenRequestByRefreshToken(_ context.Context, id string) (op.RefreshTokenRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rt, ok := s.refresh[id]
	if !ok {
		return nil, op.ErrInvalidRefreshToken
	}
	return rt, nil
}

func (s *storage) TerminateSession(context.Context, string, string) error { return nil }

func (s *storage) RevokeToken(_ context.Context, id, _, _ string) *oidc.Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.tokens, id)
	return nil
}

func (s *storage) GetRefreshTokenInfo(context.Context, string, string) (string, string, error) {
	return "", "", op.ErrInvalidRefreshToken
}

func (s *storage) SigningKey(context.Context) (op.SigningKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.current, nil
}

func (s *storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

func (s *storage) KeySet(context.Context) ([]op.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]op.Key, 0, len(s.keys))
	for _, k := range s.keys {
		out = append(out, publicKey{k})
	}
	return out, nil
}

func (s *storage) GetClientByClientID(_ context.Context, id string) (op.Client, error) {
	if c, ok := s.clients[id]; ok {
		return opClient{c}, nil
	}
	return nil, fmt.Errorf("client %q: %w", id, errNotFound)
}

func (s *storage) AuthorizeClientIDSecret(_ context.Context, id, secret string) error {
	if c, ok := s.clients[id]; ok && c.Secret == secret {
		return nil
	}
	return fmt.Errorf("client %q: wrong secret or unknown", id)
}

func (s *storage) SetUserinfoFromScopes(context.Context, *oidc.UserInfo, string, string, []string) error {
	return nil
}

func (s *storage) SetUserinfoFromToken(_ context.Context, info *oidc.UserInfo, tokenID, subject, _ string) error {
	if _, err := s.liveToken(tokenID); err != nil {
		return err
	}
	s.setUserinfo(info, subject)
	return nil
}

// SetUserinfoFromRequest puts the user's claims in ID tokens.
func (s *storage) SetUserinfoFromRequest(_ context.Context, info *oidc.UserInfo, r op.IDTokenRequest, _ []string) error {
	s.setUserinfo(info, r.GetSubject())
	return nil
}

func (s *storage) setUserinfo(info *oidc.UserInfo, subject string) {
	info.Subject = subject
	if u, ok := s.users[subject]; ok {
		info.Email, info.EmailVerified = u.Email, oidc.Bool(u.EmailVerified)
		info.AppendClaims(claimGroups, u.Groups)
	}
}

// claimGroups is the claim the provider puts a user's groups in.
const claimGroups = "groups"

func (s *storage) SetIntrospectionFromToken(_ context.Context, r *oidc.IntrospectionResponse, tokenID, subject, clientID string) error {
	t, err := s.liveToken(tokenID)
	if err != nil {
		return err
	}
	if t.subject != subject {
		return errors.New("token subject mismatch")
	}
	r.Subject, r.ClientID, r.Scope = subject, t.clientID, t.scopes
	r.Audience, r.Expiration = t.audience, oidc.FromTime(t.expiry)
	if u, ok := s.users[subject]; ok {
		r.Email, r.EmailVerified = u.Email, oidc.Bool(u.EmailVerified)
		r.Claims = map[string]any{claimGroups: u.Groups}
	}
	return nil
}

func (s *storage) liveToken(id string) (token, error) {
	s.mu.Lock()
	t, ok := s.tokens[id]
	s.mu.Unlock()
	if !ok || time.Now().After(t.expiry) {
		return token{}, errors.New("token is unknown or expired")
	}
	return t, nil
}

// GetPrivateClaimsFromScopes puts the user's email and groups and the
// granted scopes (besides openid and the userinfo ones) in JWT access
// tokens.
func (s *storage) GetPrivateClaimsFromScopes(_ context.Context, userID, _ string, scopes []string) (map[string]any, error) {
	claims := map[string]any{}
	if len(scopes) > 0 {
		claims["scope"] = strings.Join(scopes, " ")
	}
	if u, ok := s.users[userID]; ok {
		claims["email"], claims["email_verified"], claims[claimGroups] = u.Email, u.EmailVerified, u.Groups
	}
	return claims, nil
}

func (s *storage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, errors.New("the JWT profile grant is not supported")
}

func (s *storage) ValidateJWTProfileScopes(context.Context, string, []string) ([]string, error) {
	return nil, errors.New("the JWT profile grant is not supported")
}

func (s *storage) Health(context.Context) error { return nil }
