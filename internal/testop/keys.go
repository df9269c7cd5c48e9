package testop

import (
	"crypto/rand"
	"crypto/rsa"
	"fmt"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// signingKey is one RSA key the provider signs with (RS256), named by kid.
type signingKey struct {
	id  string
	key *rsa.PrivateKey
}

var (
	_ op.SigningKey = signingKey{}
	_ op.Key        = publicKey{}
)

func newSigningKey(n int) (signingKey, error) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return signingKey{}, fmt.Errorf("generating signing key: %w", err)
	}
	return signingKey{id: fmt.Sprintf("key%d", n), key: k}, nil
}

func (k signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k signingKey) Key() any                                    { return k.key }
func (k signingKey) ID() string                                  { return k.id }

// publicKey is a signing key as the JWKS publishes it.
type publicKey struct{ k signingKey }

func (p publicKey) ID() string                         { return p.k.id }
func (p publicKey) Algorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (p publicKey) Use() string                        { return "sig" }
func (p publicKey) Key() any                           { return &p.k.key.PublicKey }
