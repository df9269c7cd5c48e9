package tokenstore

import (
	"context"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
)

// RefreshAhead is how long before its expiry a token is refreshed: mcp-go
// refreshes a token once it has expired, so the store reports each token
// as expiring this much earlier than it does, and no request goes out
// with a token about to lapse on its way.
const RefreshAhead = time.Minute

// A ServerTokens is one upstream server's token in a Store, as mcp-go's
// client OAuth support reads and saves it (transport.TokenStore). It only
// hands out a token issued for the server's URL (Resource), so a token
// stored for one server never reaches another that took its name.
type ServerTokens struct {
	Store    *Store
	Server   string // the server's name in the config
	Resource string // the server's URL
}

var _ transport.TokenStore = (*ServerTokens)(nil)

// GetToken returns the server's token, or transport.ErrNoToken when it has
// none (or one for another URL).
func (s *ServerTokens) GetToken(ctx context.Context) (*transport.Token, error) {
	t, ok, err := s.Store.Get(ctx, s.Server)
	if err != nil {
		return nil, err
	}
	if !ok || t.AccessToken == "" || t.Resource != s.Resource {
		return nil, transport.ErrNoToken
	}
	out := &transport.Token{
		AccessToken:  t.AccessToken,
		TokenType:    t.TokenType,
		RefreshToken: t.RefreshToken,
		Scope:        t.Scope,
	}
	if !t.Expiry.IsZero() {
		out.ExpiresAt = t.Expiry.Add(-RefreshAhead)
	}
	return out, nil
}

// SaveToken stores a token mcp-go obtained (by a refresh), keeping the
// issuer of the one it replaces.
func (s *ServerTokens) SaveToken(ctx context.Context, tok *transport.Token) error {
	old, _, err := s.Store.Get(ctx, s.Server)
	if err != nil {
		return err
	}
	t := Token{
		AccessToken:  tok.AccessToken,
		TokenType:    tok.TokenType,
		RefreshToken: tok.RefreshToken,
		Scope:        tok.Scope,
		Expiry:       tok.ExpiresAt,
		Issuer:       old.Issuer,
		Resource:     s.Resource,
		Client:       old.Client,
	}
	if t.Expiry.IsZero() && tok.ExpiresIn > 0 {
		t.Expiry = time.Now().Add(time.Duration(tok.ExpiresIn) * time.Second)
	}
	if err := s.Store.Put(ctx, s.Server, t); err != nil {
		return fmt.Errorf("saving the token of %q: %w", s.Server, err)
	}
	return nil
}

// Client is the client registered for the server (see Token.Client), or
// nil when there is none.
func (s *ServerTokens) Client(ctx context.Context) (*Client, error) {
	t, ok, err := s.Store.Get(ctx, s.Server)
	if err != nil || !ok {
		return nil, err
	}
	return t.Client, nil
}

// SaveClient keeps c as the client registered for the server, with the
// server's token if it has one.
func (s *ServerTokens) SaveClient(ctx context.Context, c *Client) error {
	return s.Store.update(ctx, func(all map[string]Token) {
		t := all[s.Server]
		t.Client = c
		all[s.Server] = t
	})
}

// NeedScope keeps scope as the server's StepUpScope, for the next login.
func (s *ServerTokens) NeedScope(ctx context.Context, scope string) error {
	return s.Store.update(ctx, func(all map[string]Token) {
		t := all[s.Server]
		t.StepUpScope = scope
		all[s.Server] = t
	})
}

// Unusable is a token store that fails every read and write with err: the
// store of a server whose tokens cannot be reached (no key, say), so that
// the server reports why instead of mcpwarden refusing to start.
func Unusable(err error) transport.TokenStore { return unusable{err} }

type unusable struct{ err error }

func (u unusable) GetToken(context.Context) (*transport.Token, error) { return nil, u.err }
func (u unusable) SaveToken(context.Context, *transport.Token) error  { return u.err }
