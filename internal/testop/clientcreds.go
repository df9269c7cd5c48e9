package testop

import (
	"context"
	"fmt"
	"slices"

	"github.com/zitadel/oidc/v3/pkg/op"
)

// The client credentials grant: a client signs in as itself (the subject
// of its tokens is its ID), for unattended use.

var _ op.ClientCredentialsStorage = (*storage)(nil)

// ClientCredentials authenticates a client by its secret.
func (s *storage) ClientCredentials(ctx context.Context, id, secret string) (op.Client, error) {
	if err := s.AuthorizeClientIDSecret(ctx, id, secret); err != nil {
		return nil, err
	}
	return opClient{s.clients[id]}, nil
}

// ClientCredentialsTokenRequest is the token request of a client signing
// in as itself: its tokens are for its audience.
func (s *storage) ClientCredentialsTokenRequest(_ context.Context, id string, scopes []string) (op.TokenRequest, error) {
	c, ok := s.clients[id]
	if !ok {
		return nil, fmt.Errorf("client %q: %w", id, errNotFound)
	}
	return clientTokenRequest{subject: id, audience: slices.Clone(c.Audience), scopes: scopes}, nil
}

// clientTokenRequest is the token request of a client signing in as itself.
type clientTokenRequest struct {
	subject  string
	audience []string
	scopes   []string
}

func (r clientTokenRequest) GetSubject() string    { return r.subject }
func (r clientTokenRequest) GetAudience() []string { return r.audience }
func (r clientTokenRequest) GetScopes() []string   { return r.scopes }
