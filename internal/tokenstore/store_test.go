package tokenstore

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/client/transport"
)

func newKey(t *testing.T) []byte {
	t.Helper()
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	return key
}

func openStore(t *testing.T, path string, key []byte) *Store {
	t.Helper()
	s, err := Open(path, key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const testFile = "tokens.enc"

const secretAccess = "access-token-that-must-not-show-3f9a"

func sampleToken() Token {
	return Token{
		AccessToken: secretAccess, TokenType: "Bearer", RefreshToken: "refresh-token-7c1e",
		Scope: "read", Expiry: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC),
		Issuer: "https://issuer.example", Resource: "https://mcp.example/mcp",
	}
}

func TestTokenRoundTripsThroughTheFile(t *testing.T) {
	t.Parallel()
	key := newKey(t)
	path := filepath.Join(t.TempDir(), testFile)
	if err := openStore(t, path, key).Put(t.Context(), "linear", sampleToken()); err != nil {
		t.Fatal(err)
	}
	got, ok, err := openStore(t, path, key).Get(t.Context(), "linear")
	if err != nil || !ok {
		t.Fatalf("Get = %v, %v", ok, err)
	}
	if diff := cmp.Diff(sampleToken(), got); diff != "" {
		t.Errorf("token (-want +got):\n%s", diff)
	}
	if _, ok, _ := openStore(t, path, key).Get(t.Context(), "notion"); ok {
		t.Error("a server without a token has one")
	}
}

func TestDeleteRemovesOnlyThatServersToken(t *testing.T) {
	t.Parallel()
	s := openStore(t, filepath.Join(t.TempDir(), testFile), newKey(t))
	for _, name := range []string{"a", "b"} {
		if err := s.Put(t.Context(), name, sampleToken()); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Get(t.Context(), "a"); ok {
		t.Error("deleted token still there")
	}
	if _, ok, _ := s.Get(t.Context(), "b"); !ok {
		t.Error("other token gone")
	}
}

func TestWrongKeyIsRefusedWithAClearError(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), testFile)
	if err := openStore(t, path, newKey(t)).Put(t.Context(), "linear", sampleToken()); err != nil {
		t.Fatal(err)
	}
	_, _, err := openStore(t, path, newKey(t)).Get(t.Context(), "linear")
	if !errors.Is(err, ErrWrongKey) {
		t.Fatalf("Get with another key: %v, want ErrWrongKey", err)
	}
	// A write with the wrong key must not replace the others' tokens.
	if err := openStore(t, path, newKey(t)).Put(t.Context(), "x", sampleToken()); !errors.Is(err, ErrWrongKey) {
		t.Fatalf("Put with another key: %v, want ErrWrongKey", err)
	}
}

func TestAlteredFileIsRefused(t *testing.T) {
	t.Parallel()
	key := newKey(t)
	path := filepath.Join(t.TempDir(), testFile)
	if err := openStore(t, path, key).Put(t.Context(), "linear", sampleToken()); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-1] ^= 1
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := openStore(t, path, key).Get(t.Context(), "linear"); !errors.Is(err, ErrWrongKey) {
		t.Fatalf("Get of an altered file: %v, want ErrWrongKey", err)
	}
}

func TestTokenFileIsNotReadableAsPlainText(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), testFile)
	tok := sampleToken()
	if err := openStore(t, path, newKey(t)).Put(t.Context(), "linear", tok); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{tok.AccessToken, tok.RefreshToken, "linear", tok.Resource} {
		if bytes.Contains(data, []byte(secret)) {
			t.Errorf("the file holds %q in the clear", secret)
		}
	}
}

func TestTokenFileHasMode0600(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state", testFile)
	if err := openStore(t, path, newKey(t)).Put(t.Context(), "linear", sampleToken()); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.Mode().Perm(); got != 0o600 {
		t.Errorf("mode = %#o, want 0600", got)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the file (no temporary left)", len(entries))
	}
}

func TestKeyFromEnv(t *testing.T) {
	t.Parallel()
	good := base64.StdEncoding.EncodeToString(make([]byte, KeySize))
	tests := []struct {
		name, value string
		wantErr     bool
	}{
		{"a 32-byte base64 key is taken", good, false},
		{"a missing key names the variable", "", true},
		{"a key that is not base64 is refused", "not base64!", true},
		{"a short key is refused", base64.StdEncoding.EncodeToString(make([]byte, 16)), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := KeyFromEnv(func(k string) string {
				if k == KeyEnv {
					return tt.value
				}
				return ""
			})
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil && !bytes.Contains([]byte(err.Error()), []byte(KeyEnv)) {
				t.Errorf("error %q does not name %s", err, KeyEnv)
			}
		})
	}
}

func TestTokenForAnotherURLIsNotHandedOut(t *testing.T) {
	t.Parallel()
	s := openStore(t, filepath.Join(t.TempDir(), testFile), newKey(t))
	if err := s.Put(t.Context(), "linear", sampleToken()); err != nil {
		t.Fatal(err)
	}
	other := &ServerTokens{Store: s, Server: "linear", Resource: "https://evil.example/mcp"}
	if _, err := other.GetToken(t.Context()); !errors.Is(err, transport.ErrNoToken) {
		t.Fatalf("GetToken for another URL: %v, want ErrNoToken", err)
	}
}

func TestServerTokensReportExpiryEarlySoRefreshComesFirst(t *testing.T) {
	t.Parallel()
	s := openStore(t, filepath.Join(t.TempDir(), testFile), newKey(t))
	tok := sampleToken()
	tok.Expiry = time.Now().Add(RefreshAhead / 2) // still valid, but not for long
	if err := s.Put(t.Context(), "linear", tok); err != nil {
		t.Fatal(err)
	}
	st := &ServerTokens{Store: s, Server: "linear", Resource: tok.Resource}
	got, err := st.GetToken(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !got.IsExpired() {
		t.Error("a token half a RefreshAhead from expiry is not reported expired, so it would not be refreshed")
	}
	if err := st.SaveToken(t.Context(), &transport.Token{AccessToken: "new", RefreshToken: "r2", ExpiresIn: 3600}); err != nil {
		t.Fatal(err)
	}
	saved, _, _ := s.Get(t.Context(), "linear")
	if saved.AccessToken != "new" || saved.Issuer != tok.Issuer || saved.Resource != tok.Resource || time.Until(saved.Expiry) < 59*time.Minute {
		t.Errorf("saved %+v: want the new token with the old issuer and resource and an hour's expiry", saved)
	}
}

func TestLooseFileModeIsTightenedOnWrite(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), testFile)
	s := openStore(t, path, newKey(t))
	if err := s.Put(t.Context(), "a", sampleToken()); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(t.Context(), "b", sampleToken()); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.Mode().Perm(); got != 0o600 {
		t.Errorf("mode after a write over a 0644 file = %#o, want 0600", got)
	}
}
