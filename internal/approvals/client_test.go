package approvals

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTokenFileIsPrivate(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "token")
	want := TokenFile{URL: "http://127.0.0.1:1/", Token: "T", PID: 7}
	if err := WriteTokenFile(path, want); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Errorf("token file mode = %#o, want 0600", perm)
	}
	got, err := ReadTokenFile(path)
	if err != nil || got != want {
		t.Errorf("ReadTokenFile = %+v, %v", got, err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTokenFile(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("reading a world-readable token file: %v", err)
	}
	_ = os.Chmod(path, 0o600)
	if err := RemoveTokenFile(path, "other"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("RemoveTokenFile removed another instance's file: %v", err)
	}
	if err := RemoveTokenFile(path, "T"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("token file still there: %v", err)
	}
}
