package audit

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"unicode/utf8"
)

// FuzzVerifyReplicaChain writes a replica's log under any replica id, then
// appends any line: the chain names the replica it was written with, and
// no appended line, however it is made, verifies (it cannot link to the
// last line without its hash), nor makes Verify panic.
func FuzzVerifyReplicaChain(f *testing.F) {
	f.Add("replica-0", uint8(3), []byte(`{"event":"decision","replica":"replica-0","prev_sha256":""}`))
	f.Add("a\"b\n\\c", uint8(1), []byte(`{"prev_sha256":"00"}`))
	f.Add("", uint8(0), []byte("not json"))
	f.Fuzz(func(t *testing.T, id string, n uint8, extra []byte) {
		path := filepath.Join(t.TempDir(), "audit.jsonl")
		l, err := Open(Config{Path: path}, &Options{Replica: id})
		if err != nil {
			t.Fatal(err)
		}
		n = n%4 + 1
		for i := range int(n) {
			if err := l.Write(t.Context(), decisionEvent(i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		res, err := VerifyWith(VerifyOptions{}, path)
		if err != nil || res.Lines != int(n) {
			t.Fatalf("the log as written: %d lines, %v", res.Lines, err)
		}
		if utf8.ValidString(id) {
			want := []string{id}
			if id == "" {
				want = nil
			}
			if !slices.Equal(res.Replicas, want) {
				t.Fatalf("replicas = %q, want %q", res.Replicas, want)
			}
		}
		file, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = file.Write(append(extra, '\n'))
		file.Close()
		if err != nil {
			t.Fatal(err)
		}
		_, err = VerifyChains(VerifyOptions{}, Chain{Name: path, Files: []string{path}})
		var ve *VerifyError
		if err == nil || !errors.As(err, &ve) {
			t.Fatalf("a log with an appended line %q verified: %v", extra, err)
		}
	})
}
