package tokenstore

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzTokenFile reads arbitrary bytes as the token file: it never panics,
// and anything that does not decrypt with the key is ErrWrongKey, so a
// file someone else wrote (or truncated) is never taken for tokens.
func FuzzTokenFile(f *testing.F) {
	key := make([]byte, KeySize)
	dir := f.TempDir()
	good := filepath.Join(dir, "seed")
	s, err := Open(good, key)
	if err != nil {
		f.Fatal(err)
	}
	if err := s.Put(f.Context(), "linear", sampleToken()); err != nil {
		f.Fatal(err)
	}
	seed, err := os.ReadFile(good)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte{})
	f.Add([]byte(`{"linear":{"access_token":"x"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "tokens.enc")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := Open(path, key)
		if err != nil {
			t.Fatal(err)
		}
		_, ok, err := s.Get(t.Context(), "linear")
		switch {
		case string(data) == string(seed) && (err != nil || !ok):
			t.Fatalf("the file it wrote does not read back: %v", err)
		case err != nil && !errors.Is(err, ErrWrongKey):
			t.Fatalf("a file that does not decrypt gives %v, want ErrWrongKey", err)
		}
	})
}
