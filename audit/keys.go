package audit

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

// A SigningKey is the private key that signs a log's checkpoints, in the
// signer key format of golang.org/x/mod/sumdb/note (Ed25519), and its
// public key, the verifier key an auditor is given.
type SigningKey struct {
	Signer note.Signer
	Public string
	text   string // the signer key
}

// ParseSigningKey reads a note signer key ("PRIVATE+KEY+<name>+<hash>+<key>")
// and derives its public verifier key.
func ParseSigningKey(skey string) (SigningKey, error) {
	skey = strings.TrimSpace(skey)
	signer, err := note.NewSigner(skey)
	if err != nil {
		return SigningKey{}, fmt.Errorf("audit signing key: %w (want the key `mcpwarden audit key` generates: PRIVATE+KEY+…)", err)
	}
	parts := strings.SplitN(skey, "+", 5)
	raw, err := base64.StdEncoding.DecodeString(parts[4])
	if err != nil || len(raw) != 1+ed25519.SeedSize || raw[0] != 1 {
		return SigningKey{}, errors.New("audit signing key: not an Ed25519 note key")
	}
	pub := ed25519.NewKeyFromSeed(raw[1:]).Public().(ed25519.PublicKey)
	vkey, err := note.NewEd25519VerifierKey(signer.Name(), pub)
	if err != nil {
		return SigningKey{}, fmt.Errorf("audit signing key: %w", err)
	}
	return SigningKey{Signer: signer, Public: vkey, text: skey}, nil
}

// LoadSigningKey reads the signing key from the file at path, which must be
// the caller's own and readable by no one else, generating it (mode 0600,
// never overwriting) on first use.
func LoadSigningKey(path string) (SigningKey, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return createSigningKey(path)
	}
	if err != nil {
		return SigningKey{}, fmt.Errorf("reading the audit signing key: %w", err)
	}
	info, err := os.Stat(path)
	if err != nil {
		return SigningKey{}, fmt.Errorf("reading the audit signing key: %w", err)
	}
	if info.Mode().Perm()&0o077 != 0 {
		return SigningKey{}, fmt.Errorf("audit signing key %s has mode %#o: others may read it; run chmod 600 %s", path, info.Mode().Perm(), path)
	}
	k, err := ParseSigningKey(string(data))
	if err != nil {
		return SigningKey{}, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// createSigningKey generates a key into a new file at path.
func createSigningKey(path string) (SigningKey, error) {
	skey, _, err := note.GenerateKey(rand.Reader, KeyName)
	if err != nil {
		return SigningKey{}, fmt.Errorf("generating the audit signing key: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return SigningKey{}, fmt.Errorf("creating the audit signing key's directory: %w", err)
	}
	// Written whole to a file of its own, then linked into place, which
	// fails if another mcpwarden made the key meanwhile: no one ever reads
	// a half-written key, and none is overwritten.
	f, err := os.CreateTemp(filepath.Dir(path), ".audit-key-*")
	if err != nil {
		return SigningKey{}, fmt.Errorf("creating the audit signing key: %w", err)
	}
	defer os.Remove(f.Name())
	_, err = f.WriteString(skey + "\n")
	if err = errors.Join(err, f.Chmod(0o600), f.Sync(), f.Close()); err != nil {
		return SigningKey{}, fmt.Errorf("writing the audit signing key %s: %w", path, err)
	}
	if err := os.Link(f.Name(), path); errors.Is(err, os.ErrExist) {
		return LoadSigningKey(path)
	} else if err != nil {
		return SigningKey{}, fmt.Errorf("creating the audit signing key %s: %w", path, err)
	}
	return ParseSigningKey(skey)
}

// ParseVerifierKey reads a public key as `mcpwarden audit key` prints it
// ("<name>+<hash>+<key>"), or the file holding it.
func ParseVerifierKey(s string) (note.Verifiers, error) {
	s = strings.TrimSpace(s)
	v, err := note.NewVerifier(s)
	if err != nil {
		data, ferr := os.ReadFile(s)
		if ferr != nil {
			return nil, fmt.Errorf("public key %q: %w, nor a file holding one (want what mcpwarden audit key prints: %s+…)", s, err, KeyName)
		}
		if v, err = note.NewVerifier(strings.TrimSpace(string(data))); err != nil {
			return nil, fmt.Errorf("public key in %s: %w (want what mcpwarden audit key prints: %s+…)", s, err, KeyName)
		}
	}
	return note.VerifierList(v), nil
}
