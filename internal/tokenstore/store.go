// Package tokenstore keeps the OAuth tokens mcpwarden holds as a client of
// remote upstream servers, one per server, encrypted at rest in a 0600
// file: AES-256-GCM with a key from the environment (KeyEnv) or, when
// that is not set, from the OS keyring (ResolveKey). A Store is safe for concurrent use within a
// process; two processes writing the same file at once can lose one
// write, never corrupt it (each write replaces the file whole, through
// atomicfile).
package tokenstore

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/atomicfile"
)

// KeyEnv is the environment variable holding the store's key: 32 random
// bytes in standard base64 (`openssl rand -base64 32`).
const KeyEnv = "MCPWARDEN_TOKEN_KEY"

// KeySize is the length of the key in bytes (AES-256).
const KeySize = 32

// fileMode is the mode of the store's file: the user's alone.
const fileMode = 0o600

// ErrNoKey is returned by KeyFromEnv when KeyEnv is not set.
var ErrNoKey = errors.New(KeyEnv + " is not set: it holds the key the upstream OAuth tokens are encrypted with (32 bytes, base64; make one with `openssl rand -base64 32`)")

// ErrWrongKey is returned when the store's file does not decrypt with the
// key: the key changed, or the file was altered.
var ErrWrongKey = errors.New("the upstream token file does not decrypt with " + KeyEnv + ": the key is not the one it was written with, or the file was altered")

// A Token is what the store holds for one upstream server.
type Token struct {
	AccessToken  string    `json:"access_token"`
	TokenType    string    `json:"token_type,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Scope        string    `json:"scope,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"` // zero: unknown
	// Issuer is the authorization server that issued the token; Resource
	// the server URL it was issued for (RFC 8707), which it is only ever
	// sent to.
	Issuer   string `json:"issuer,omitempty"`
	Resource string `json:"resource,omitempty"`
	// Client is the client mcpwarden registered itself as at Issuer
	// (RFC 7591 dynamic registration) when the config names none; later
	// logins and every refresh reuse it. Nil for a configured client.
	Client *Client `json:"client,omitempty"`
	// StepUpScope is the scope the server last refused the token for
	// lacking (a 403 insufficient_scope): the next login asks for it too.
	// A new token clears it.
	StepUpScope string `json:"step_up_scope,omitempty"`
}

// A Client is a client registration mcpwarden obtained from an
// authorization server. Its secret is kept encrypted like the tokens.
type Client struct {
	ID     string `json:"client_id"`
	Secret string `json:"client_secret,omitempty"`
	// AuthMethod is the token_endpoint_auth_method the server registered
	// (client_secret_basic, client_secret_post or none).
	AuthMethod string `json:"token_endpoint_auth_method,omitempty"`
	// Issuer is the authorization server the client is registered at; a
	// server that moves to another one needs a new registration.
	Issuer string `json:"issuer"`
}

// KeyFromEnv reads and decodes the key in KeyEnv. getenv reads the
// environment.
func KeyFromEnv(getenv func(string) string) ([]byte, error) {
	v := getenv(KeyEnv)
	if v == "" {
		return nil, ErrNoKey
	}
	key, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		return nil, fmt.Errorf("decoding %s as base64: %w", KeyEnv, err)
	}
	if len(key) != KeySize {
		return nil, fmt.Errorf("%s holds %d bytes, want %d", KeyEnv, len(key), KeySize)
	}
	return key, nil
}

// A Store is the token file at one path, read and written whole.
type Store struct {
	path    string
	resolve func(context.Context) ([]byte, KeySource, error) // nil once aead is set

	mu     sync.Mutex // serialises read-modify-write of the file; guards aead and source
	aead   cipher.AEAD
	source KeySource
}

// Open returns the store at path with key (KeySize bytes). The file need
// not exist yet; nothing is read until Get or Put.
func Open(path string, key []byte) (*Store, error) {
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	return &Store{path: path, aead: aead}, nil
}

// OpenLazy returns the store at path whose key resolve finds on the first
// Get or Put (see ResolveKey), so that opening it does no I/O; a key that
// cannot be found fails each Get and Put until one can.
func OpenLazy(path string, resolve func(context.Context) ([]byte, KeySource, error)) *Store {
	return &Store{path: path, resolve: resolve}
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("token store key is %d bytes, want %d", len(key), KeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("token store key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("token store key: %w", err)
	}
	return aead, nil
}

// KeySource says where the store's key came from, once it has one (false
// before the first Get or Put of a lazily opened store). Open's key
// counts as the environment's.
func (s *Store) KeySource() (KeySource, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.source, s.aead != nil
}

// ready finds the key if it is not known yet. s.mu is held.
func (s *Store) ready(ctx context.Context) error {
	if s.aead != nil {
		return nil
	}
	key, source, err := s.resolve(ctx)
	if err != nil {
		return err
	}
	aead, err := newAEAD(key)
	if err != nil {
		return err
	}
	s.aead, s.source, s.resolve = aead, source, nil
	return nil
}

// Path is the store's file.
func (s *Store) Path() string { return s.path }

// Get returns the token of server, and false when there is none.
func (s *Store) Get(ctx context.Context, server string) (Token, bool, error) {
	if err := ctx.Err(); err != nil {
		return Token{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ready(ctx); err != nil {
		return Token{}, false, err
	}
	all, err := s.load()
	if err != nil {
		return Token{}, false, err
	}
	t, ok := all[server]
	return t, ok, nil
}

// Put stores t as server's token, replacing any it had.
func (s *Store) Put(ctx context.Context, server string, t Token) error {
	return s.update(ctx, func(all map[string]Token) { all[server] = t })
}

// Delete removes server's token, if it has one.
func (s *Store) Delete(ctx context.Context, server string) error {
	return s.update(ctx, func(all map[string]Token) { delete(all, server) })
}

func (s *Store) update(ctx context.Context, change func(map[string]Token)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ready(ctx); err != nil {
		return err
	}
	all, err := s.load()
	if err != nil {
		return err
	}
	change(all)
	return s.save(all)
}

// aad binds the ciphertext to what it is, so no other GCM blob under the
// same key passes for a token file.
var aad = []byte("mcpwarden upstream tokens v1")

// load reads and decrypts the file; a missing file is an empty store.
func (s *Store) load() (map[string]Token, error) {
	data, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]Token{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading upstream token file: %w", err)
	}
	n := s.aead.NonceSize()
	if len(data) < n {
		return nil, fmt.Errorf("upstream token file %s: %w", s.path, ErrWrongKey)
	}
	plain, err := s.aead.Open(nil, data[:n], data[n:], aad)
	if err != nil {
		return nil, fmt.Errorf("upstream token file %s: %w", s.path, ErrWrongKey)
	}
	all := map[string]Token{}
	if err := json.Unmarshal(plain, &all); err != nil {
		return nil, fmt.Errorf("decoding upstream token file %s: %w", s.path, err)
	}
	return all, nil
}

// save encrypts all and replaces the file with it atomically
// (atomicfile.Write), always with mode 0600, whatever the old file had.
func (s *Store) save(all map[string]Token) error {
	plain, err := json.Marshal(all)
	if err != nil {
		return fmt.Errorf("encoding upstream tokens: %w", err)
	}
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return fmt.Errorf("making a nonce: %w", err)
	}
	data := s.aead.Seal(nonce, nonce, plain, aad)
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return fmt.Errorf("creating directory of upstream token file: %w", err)
	}
	if err := atomicfile.Write(s.path, data, fileMode); err != nil {
		return fmt.Errorf("writing upstream token file: %w", err)
	}
	return nil
}
