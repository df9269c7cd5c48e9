package tokenstore

// Where the store's key comes from: MCPWARDEN_TOKEN_KEY when it is set
// (an explicit choice, and what headless deployments and CI use), else
// the OS keyring where there is one (macOS Keychain, Windows Credential
// Manager, the Secret Service on a Linux desktop), which then holds a
// random key made on first use. The tokens stay in the 0600 file either
// way; only the key moves.

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/zalando/go-keyring"
)

// A KeySource says where the store's key came from.
type KeySource uint8

// KeySource values.
const (
	KeyFromEnvironment KeySource = iota // KeyEnv
	KeyFromKeyring                      // the OS keyring
)

// String says where the key came from, for `mcpwarden login`'s output
// and the logs.
func (s KeySource) String() string {
	switch s {
	case KeyFromEnvironment:
		return "the environment (" + KeyEnv + ")"
	case KeyFromKeyring:
		return "the OS keyring"
	}
	return "an unknown source"
}

// A Keyring holds one secret under a name: the OS keyring (OSKeyring),
// or a stand-in in tests. Get returns ErrKeyringEmpty when it holds none.
type Keyring interface {
	Get(ctx context.Context) (string, error)
	Set(ctx context.Context, secret string) error
}

// ErrKeyringEmpty is returned by a Keyring that holds no secret yet.
var ErrKeyringEmpty = errors.New("the keyring holds no mcpwarden token key")

// KeyringEnv, set to "off", keeps mcpwarden from the OS keyring: the key
// must then be in KeyEnv (a server with a desktop keyring that should not
// be touched, hermetic tests).
const KeyringEnv = "MCPWARDEN_KEYRING"

// KeyringService and KeyringUser name the key's entry in the OS keyring.
const (
	KeyringService = "mcpwarden"
	KeyringUser    = "upstream-token-key"
)

// keyringTimeout bounds one keyring operation: a keyring that asks the
// person to unlock it, or a session bus that does not answer, must not
// hold up `serve`.
const keyringTimeout = 5 * time.Second

// An OSKeyring is the entry Service/User of the OS keyring. The zero
// Service and User mean KeyringService and KeyringUser.
type OSKeyring struct{ Service, User string }

var _ Keyring = OSKeyring{}

func (k OSKeyring) names() (string, string) {
	s, u := k.Service, k.User
	if s == "" {
		s = KeyringService
	}
	if u == "" {
		u = KeyringUser
	}
	return s, u
}

// Get reads the entry.
func (k OSKeyring) Get(ctx context.Context) (string, error) {
	s, u := k.names()
	var secret string
	err := withTimeout(ctx, func() error {
		var err error
		secret, err = keyring.Get(s, u)
		if errors.Is(err, keyring.ErrNotFound) {
			return ErrKeyringEmpty
		}
		return err
	})
	return secret, err
}

// Set writes the entry.
func (k OSKeyring) Set(ctx context.Context, secret string) error {
	s, u := k.names()
	return withTimeout(ctx, func() error { return keyring.Set(s, u, secret) })
}

// Delete removes the entry, if there is one.
func (k OSKeyring) Delete(ctx context.Context) error {
	s, u := k.names()
	return withTimeout(ctx, func() error {
		if err := keyring.Delete(s, u); err != nil && !errors.Is(err, keyring.ErrNotFound) {
			return err
		}
		return nil
	})
}

// withTimeout runs f, giving up after keyringTimeout or when ctx ends.
// go-keyring takes no context; a call that hangs is left to finish on its
// own (its result is dropped), which is why this is only ever used for a
// handful of calls in a process.
func withTimeout(ctx context.Context, f func() error) error {
	ctx, cancel := context.WithTimeout(ctx, keyringTimeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("the OS keyring did not answer: %w", ctx.Err())
	}
}

// ResolveKey is the store's key: from KeyEnv when it is set, else from
// kr (nil, or KeyringEnv=off: no keyring), where a new random key is put on first use. The
// error of a machine with neither wraps ErrNoKey and says why the keyring
// could not serve.
func ResolveKey(ctx context.Context, getenv func(string) string, kr Keyring) ([]byte, KeySource, error) {
	if getenv(KeyEnv) != "" || kr == nil || getenv(KeyringEnv) == "off" {
		key, err := KeyFromEnv(getenv)
		return key, KeyFromEnvironment, err
	}
	v, err := kr.Get(ctx)
	if errors.Is(err, ErrKeyringEmpty) {
		key := make([]byte, KeySize)
		if _, err := rand.Read(key); err != nil {
			return nil, 0, fmt.Errorf("making a token key: %w", err)
		}
		if err = kr.Set(ctx, base64.StdEncoding.EncodeToString(key)); err == nil {
			// Read it back: of two processes making the first key at once,
			// both then use the one written last.
			v, err = kr.Get(ctx)
		}
	}
	if err != nil {
		return nil, 0, fmt.Errorf("%w (and there is no usable OS keyring: %v)", ErrNoKey, err)
	}
	key, err := base64.StdEncoding.DecodeString(v)
	if err != nil || len(key) != KeySize {
		return nil, 0, fmt.Errorf("the token key in the OS keyring (%s/%s) is not %d bytes of base64: remove it, or set %s", KeyringService, KeyringUser, KeySize, KeyEnv)
	}
	return key, KeyFromKeyring, nil
}
