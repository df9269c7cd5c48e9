package tokenstore

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// A memKeyring stands in for an OS keyring, which this machine (a
// headless CI box) does not have.
type memKeyring struct {
	mu     sync.Mutex
	secret string
	sets   int
}

func (k *memKeyring) Get(context.Context) (string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.secret == "" {
		return "", ErrKeyringEmpty
	}
	return k.secret, nil
}

func (k *memKeyring) Set(_ context.Context, s string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.secret, k.sets = s, k.sets+1
	return nil
}

// brokenKeyring is a keyring that cannot be reached.
type brokenKeyring struct{}

func (brokenKeyring) Get(context.Context) (string, error) { return "", errors.New("no secret service") }
func (brokenKeyring) Set(context.Context, string) error   { return errors.New("no secret service") }

func env(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

func randomKey(t *testing.T) string {
	t.Helper()
	k := make([]byte, KeySize)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(k)
}

func TestKeyComesFromTheEnvironmentFirstThenTheKeyring(t *testing.T) {
	t.Parallel()
	envKey := randomKey(t)
	tests := []struct {
		name    string
		env     map[string]string
		kr      Keyring
		want    KeySource
		wantErr bool
	}{
		{"the environment's key wins over a keyring", map[string]string{KeyEnv: envKey}, &memKeyring{}, KeyFromEnvironment, false},
		{"no environment key: the keyring's", nil, &memKeyring{}, KeyFromKeyring, false},
		{"no environment key, keyring off", map[string]string{KeyringEnv: "off"}, &memKeyring{}, 0, true},
		{"no environment key, no keyring", nil, nil, 0, true},
		{"no environment key, a keyring that cannot be reached", nil, brokenKeyring{}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			key, got, err := ResolveKey(t.Context(), env(tt.env), tt.kr)
			if tt.wantErr {
				if !errors.Is(err, ErrNoKey) {
					t.Fatalf("err = %v, want ErrNoKey", err)
				}
				return
			}
			if err != nil || got != tt.want || len(key) != KeySize {
				t.Fatalf("ResolveKey = %d bytes from %v, %v; want a key from %v", len(key), got, err, tt.want)
			}
		})
	}
}

func TestKeyringKeyIsMadeOnceAndReused(t *testing.T) {
	t.Parallel()
	kr := &memKeyring{}
	dir := t.TempDir()
	open := func() *Store {
		return OpenLazy(filepath.Join(dir, "tokens.enc"), func(ctx context.Context) ([]byte, KeySource, error) {
			return ResolveKey(ctx, env(nil), kr)
		})
	}
	if err := open().Put(t.Context(), "s", Token{AccessToken: "secret-token"}); err != nil {
		t.Fatal(err)
	}
	s := open()
	tok, ok, err := s.Get(t.Context(), "s")
	if err != nil || !ok || tok.AccessToken != "secret-token" {
		t.Fatalf("Get = %+v, %v, %v", tok, ok, err)
	}
	if src, ok := s.KeySource(); !ok || src != KeyFromKeyring {
		t.Errorf("KeySource = %v, %v; want the keyring", src, ok)
	}
	if kr.sets != 1 {
		t.Errorf("the keyring was written %d times, want once", kr.sets)
	}
	data, err := os.ReadFile(filepath.Join(dir, "tokens.enc"))
	if err != nil || strings.Contains(string(data), "secret-token") {
		t.Errorf("the token file holds the token in the clear (%v)", err)
	}
}

func TestStoreWithoutAKeyFailsEachUseAndNamesTheVariable(t *testing.T) {
	t.Parallel()
	s := OpenLazy(filepath.Join(t.TempDir(), "tokens.enc"), func(ctx context.Context) ([]byte, KeySource, error) {
		return ResolveKey(ctx, env(nil), brokenKeyring{})
	})
	for range 2 {
		if _, _, err := s.Get(t.Context(), "s"); !errors.Is(err, ErrNoKey) || !strings.Contains(err.Error(), KeyEnv) {
			t.Fatalf("Get: err = %v, want ErrNoKey naming %s", err, KeyEnv)
		}
	}
	if _, ok := s.KeySource(); ok {
		t.Error("KeySource reports a key the store does not have")
	}
}

// TestOSKeyringFallbackOnThisMachine uses the real OS keyring, under an
// entry of its own that it removes: on a machine without one (CI), the
// environment's key must still serve and the missing key must be reported
// promptly, not hang; on a desktop, the keyring serves.
func TestOSKeyringFallbackOnThisMachine(t *testing.T) {
	t.Parallel()
	kr := OSKeyring{Service: "mcpwarden-test", User: randomKey(t)[:12]}
	t.Cleanup(func() { _ = kr.Delete(context.Background()) })
	start := time.Now()
	key, src, err := ResolveKey(t.Context(), env(nil), kr)
	t.Logf("OS keyring: %d-byte key from %v, err %v, in %s", len(key), src, err, time.Since(start).Round(time.Millisecond))
	if err != nil && !errors.Is(err, ErrNoKey) {
		t.Errorf("err = %v, want a key or ErrNoKey", err)
	}
	if err == nil && src != KeyFromKeyring {
		t.Errorf("source = %v, want the keyring", src)
	}
	if d := time.Since(start); d > keyringTimeout+2*time.Second {
		t.Errorf("the keyring took %s", d)
	}
	if _, src, err := ResolveKey(t.Context(), env(map[string]string{KeyEnv: randomKey(t)}), kr); err != nil || src != KeyFromEnvironment {
		t.Errorf("with %s set: source %v, err %v; want the environment", KeyEnv, src, err)
	}
}
