package audit

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzRepairKeepsEveryByte checks that Repair, whatever the log holds,
// loses nothing: the log keeps every byte up to its last newline, the
// moved file holds every byte after it, and the log ends with a whole line
// (the lost event) after a repair.
func FuzzRepairKeepsEveryByte(f *testing.F) {
	f.Add([]byte("{\"event\":\"decision\",\"prev_sha256\":\"\"}\n{\"event\":\"dec"))
	f.Add([]byte(""))
	f.Add([]byte("no newline at all"))
	f.Add([]byte("\n\n\n"))
	f.Add([]byte("a\nb\nc"))
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "audit.jsonl")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		res, err := Repair(path, now)
		if err != nil {
			t.Fatalf("Repair: %v", err)
		}
		after, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		whole := bytes.LastIndexByte(data, '\n') + 1
		if whole == len(data) {
			if res.Torn != "" || !bytes.Equal(after, data) {
				t.Fatalf("a log ending with a whole line was changed: %+v, %q", res, after)
			}
			return
		}
		moved, err := os.ReadFile(res.MovedTo)
		if err != nil {
			t.Fatalf("moved tail: %v", err)
		}
		if !bytes.Equal(moved, data[whole:]) || res.TornBytes != int64(len(data)-whole) {
			t.Errorf("moved %q (%d bytes), want %q", moved, res.TornBytes, data[whole:])
		}
		if !bytes.HasPrefix(after, data[:whole]) || !bytes.HasSuffix(after, []byte("\n")) {
			t.Errorf("log after repair %q does not keep %q and end with a whole line", after, data[:whole])
		}
		if bytes.Count(after[whole:], []byte("\n")) != 1 || !bytes.Contains(after[whole:], []byte(`"event":"lost"`)) {
			t.Errorf("log after repair %q: want one lost event after the kept lines", after[whole:])
		}
	})
}
