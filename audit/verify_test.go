package audit

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeChain writes n chained events to a fresh log and returns its lines.
func writeChain(t *testing.T, n int) []string {
	t.Helper()
	l, path := openTestLog(t, Config{})
	for i := range n {
		if err := l.Write(t.Context(), decisionEvent(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return readLines(t, path)
}

func TestVerifyCatchesTampering(t *testing.T) {
	t.Parallel()
	lines := writeChain(t, 6)
	edit := func(f func(l []string) []string) string {
		c := f(append([]string(nil), lines...))
		return strings.Join(c, "\n") + "\n"
	}
	tests := []struct {
		name     string
		content  string
		wantLine int
		wantErr  error
	}{
		{"an altered line breaks the link of the next", edit(func(l []string) []string {
			l[2] = strings.Replace(l[2], "/srv/2", "/srv/X", 1)
			return l
		}), 4, ErrChainBroken},
		{"a deleted line breaks the link after the gap", edit(func(l []string) []string {
			return append(l[:3], l[4:]...)
		}), 4, ErrChainBroken},
		{"a reordered pair breaks at the first of them", edit(func(l []string) []string {
			l[2], l[3] = l[3], l[2]
			return l
		}), 3, ErrChainBroken},
		{"an inserted copy breaks after it", edit(func(l []string) []string {
			return append(l[:3], append([]string{l[1]}, l[3:]...)...)
		}), 4, ErrChainBroken},
		{"a deleted first line breaks the genesis", edit(func(l []string) []string {
			return l[1:]
		}), 1, ErrChainBroken},
		{"a re-chained edit still breaks at the end of the edit", edit(func(l []string) []string {
			// Altering prev_sha256 of the next line too only moves the break.
			l[2] = strings.Replace(l[2], "/srv/2", "/srv/X", 1)
			l[3] = strings.Replace(l[3], `"prev_sha256":"`, `"prev_sha256":"0`, 1)
			return l
		}), 4, ErrChainBroken},
		{"a line that is not JSON", edit(func(l []string) []string {
			l[1] = "garbage"
			return l
		}), 2, nil},
		{"an empty line", edit(func(l []string) []string {
			l[5] = ""
			return l
		}), 6, nil},
		{"a line without prev_sha256", edit(func(l []string) []string {
			l[0] = `{"event":"decision"}`
			return l
		}), 1, nil},
		{"a missing final newline", strings.TrimSuffix(edit(func(l []string) []string { return l }), "\n"), 6, nil},
	}
	dir := t.TempDir()
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(dir, strings.Repeat("x", i+1)+".jsonl")
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Verify(path)
			var ve *VerifyError
			if !errors.As(err, &ve) {
				t.Fatalf("Verify: got %v, want a *VerifyError", err)
			}
			if ve.Path != path || ve.Line != tt.wantLine {
				t.Errorf("got %s:%d, want %s:%d (%v)", ve.Path, ve.Line, path, tt.wantLine, err)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("got %v, want %v", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), path+":") {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

func TestVerifyAcceptsAnIntactLog(t *testing.T) {
	t.Parallel()
	lines := writeChain(t, 5)
	path := filepath.Join(t.TempDir(), "a.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := VerifyWith(VerifyOptions{}, path)
	if err != nil {
		t.Fatal(err)
	}
	if res.Lines != 5 || res.Files != 1 || res.LastSHA256 != hashLine([]byte(lines[4])) {
		t.Errorf("got %+v", res)
	}
	// The second half verifies on its own given the hash before it.
	tail := filepath.Join(t.TempDir(), "b.jsonl")
	if err := os.WriteFile(tail, []byte(strings.Join(lines[2:], "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyWith(VerifyOptions{Prev: hashLine([]byte(lines[1]))}, tail); err != nil {
		t.Errorf("Verify from a known prev: %v", err)
	}
}

func TestVerifyNamesAMissingFile(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "nope.jsonl")
	if _, err := Verify(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("got %v, want an error naming %s", err, missing)
	}
	if _, err := Verify(); err == nil {
		t.Error("Verify of no files succeeded")
	}
}

func TestVerifyReadsLinesLongerThanItsBuffer(t *testing.T) {
	t.Parallel()
	first := `{"time":"2026-01-01T00:00:00Z","event":"decision","id":"a","detail":"` + strings.Repeat("x", 200<<10) + `","prev_sha256":""}`
	second := `{"time":"2026-01-01T00:00:00Z","event":"decision","id":"b","prev_sha256":"` + hashLine([]byte(first)) + `"}`
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	if err := os.WriteFile(path, []byte(first+"\n"+second+"\n"+second+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n, err := Verify(path)
	var ve *VerifyError
	if n != 2 || !errors.As(err, &ve) || ve.Line != 3 {
		t.Errorf("Verify = %d, %v; want 2 lines, then line 3 broken", n, err)
	}
}
