package audit

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A brokenDir makes the directory of a log unusable in a way that stops
// root too: the directory is moved aside and a regular file takes its
// place, so every path through it fails with ENOTDIR whatever the
// permissions (chmod does not stop root, and CI runs as root). The open
// file keeps working, as it would on a real disk that refuses only new
// entries: what fails is what rotation does, closing, renaming and opening.
// Fix puts the directory back, as an operator freeing the disk would.
type brokenDir struct {
	t         *testing.T
	dir, away string
}

func breakDir(t *testing.T, dir string) *brokenDir {
	t.Helper()
	b := &brokenDir{t: t, dir: dir, away: dir + ".away"}
	if err := os.Rename(dir, b.away); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, []byte("not a directory\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return b
}

func (b *brokenDir) fix() {
	b.t.Helper()
	if err := os.Remove(b.dir); err != nil {
		b.t.Fatal(err)
	}
	if err := os.Rename(b.away, b.dir); err != nil {
		b.t.Fatal(err)
	}
}

// readEvents decodes every line of the files, in order.
func readEvents(t *testing.T, files []string) []Event {
	t.Helper()
	var out []Event
	for _, f := range files {
		for _, line := range readLines(t, f) {
			var e Event
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				t.Fatalf("%s: %q: %v", f, line, err)
			}
			out = append(out, e)
		}
	}
	return out
}

func TestFailedRotationResumesWhenDiskRecovers(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "logs")
	path := filepath.Join(dir, "audit.jsonl")
	s, err := OpenFile(path, FileOptions{MaxBytes: 1500, Fsync: true})
	if err != nil {
		t.Fatal(err)
	}
	l := New(s, Config{Required: true})
	defer l.Close()
	written := 0
	for i := range 5 {
		if err := l.Write(t.Context(), decisionEvent(i)); err != nil {
			t.Fatal(err)
		}
		written++
	}

	broken := breakDir(t, dir)
	// Writes go on into the open file until one needs a rotation, which
	// fails; from then on every write fails, none with a closed file.
	failed := 0
	for i := 0; failed < 5; i++ {
		if i > 100 {
			t.Fatal("no write failed: the rotation never ran")
		}
		err := l.Write(t.Context(), decisionEvent(100+i))
		switch {
		case err == nil && failed == 0:
			written++
		case err == nil:
			t.Fatalf("write %d after a failed rotation succeeded while the directory is still broken", i)
		case errors.Is(err, os.ErrClosed):
			t.Fatalf("write %d: %v: the sink wrote to a closed file", i, err)
		default:
			failed++
		}
	}

	broken.fix()
	for i := range 5 {
		if err := l.Write(t.Context(), decisionEvent(200+i)); err != nil {
			t.Fatalf("write %d after the directory came back: %v", i, err)
		}
		written++
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	files, err := Files(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 2 {
		t.Errorf("files %v: want the rotation to have happened once the directory came back", files)
	}
	n, err := Verify(files...)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if want := written + 1; n != want { // + the lost event
		t.Errorf("Verify counted %d lines, want %d written events and one lost event", n, written)
	}
}

func TestLostEventsAreRecorded(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "logs")
	path := filepath.Join(dir, "audit.jsonl")
	s, err := OpenFile(path, FileOptions{MaxBytes: 1}) // every write rotates
	if err != nil {
		t.Fatal(err)
	}
	l := New(s, Config{})
	defer l.Close()
	if err := l.Write(t.Context(), decisionEvent(0)); err != nil {
		t.Fatal(err)
	}
	broken := breakDir(t, dir)
	lost := []Kind{KindDecision, KindResult, KindDecision}
	for _, k := range lost {
		e := decisionEvent(1)
		e.Event = k
		if err := l.Write(t.Context(), e); err == nil {
			t.Fatalf("a %s event was written into a broken directory", k)
		}
	}
	broken.fix()
	if err := l.Write(t.Context(), decisionEvent(2)); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	files, err := Files(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(files...); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	events := readEvents(t, files)
	var kinds []Kind
	for _, e := range events {
		kinds = append(kinds, e.Event)
	}
	if want := []Kind{KindDecision, KindLost, KindDecision}; !equalKinds(kinds, want) {
		t.Fatalf("events %v, want %v", kinds, want)
	}
	got := events[1]
	if got.Lost != 3 {
		t.Errorf("lost = %d, want 3", got.Lost)
	}
	if !strings.Contains(got.Error, "not a directory") {
		t.Errorf("error %q does not say why the events were lost", got.Error)
	}
	if !strings.Contains(got.Detail, "2 decision, 1 result") {
		t.Errorf("detail %q does not count the lost events by kind", got.Detail)
	}
}

func TestLostEventsAreRecordedAtClose(t *testing.T) {
	t.Parallel()
	s := &failingSink{ok: 1}
	l := New(s, Config{})
	if err := l.Write(t.Context(), decisionEvent(0)); err != nil {
		t.Fatal(err)
	}
	if err := l.Write(t.Context(), decisionEvent(1)); err == nil {
		t.Fatal("Write succeeded, want an error")
	}
	s.mu.Lock()
	s.ok = 2
	s.mu.Unlock()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if len(s.got) != 2 || !strings.Contains(string(s.got[1]), `"lost":1`) {
		t.Errorf("sink got %q, want the event and then a lost event counting 1", s.got)
	}
}

func TestEventsAfterALostEventWaitForIt(t *testing.T) {
	t.Parallel()
	s := &failingSink{ok: 1}
	l := New(s, Config{})
	for i := range 3 {
		_ = l.Write(t.Context(), decisionEvent(i))
	}
	if len(s.got) != 1 {
		t.Fatalf("sink got %d lines, want 1", len(s.got))
	}
	// The sink stores one more line: the lost event, not the next event.
	s.mu.Lock()
	s.ok = 2
	s.mu.Unlock()
	if err := l.Write(t.Context(), decisionEvent(3)); err == nil {
		t.Fatal("Write succeeded, but the sink stored only the lost event")
	}
	if !strings.Contains(string(s.got[1]), `"lost":2`) {
		t.Errorf("second line %q, want the lost event counting 2", s.got[1])
	}
	s.mu.Lock()
	s.ok = 4
	s.mu.Unlock()
	if err := l.Write(t.Context(), decisionEvent(4)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(s.got[2]), `"lost":1`) {
		t.Errorf("third line %q, want a lost event counting the one event lost since", s.got[2])
	}
}

func equalKinds(a, b []Kind) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestReopenCutsAPartialLineLeftByAFailedWrite(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "logs")
	path := filepath.Join(dir, "audit.jsonl")
	s, err := OpenFile(path, FileOptions{MaxBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	l := New(s, Config{})
	defer l.Close()
	if err := l.Write(t.Context(), decisionEvent(0)); err != nil {
		t.Fatal(err)
	}
	broken := breakDir(t, dir)
	if err := l.Write(t.Context(), decisionEvent(1)); err == nil {
		t.Fatal("a write into a broken directory succeeded")
	}
	// What a write cut short by the failure, and not cut back off then,
	// would leave behind in the file the sink had open.
	f, err := os.OpenFile(filepath.Join(broken.away, "audit.jsonl"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"time":"2026-12-03T10:00:00Z","ev`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	broken.fix()
	if err := l.Write(t.Context(), decisionEvent(2)); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	files, err := Files(path)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := Verify(files...); err != nil || n != 3 { // 2 events and the lost one
		t.Errorf("Verify = %d, %v; want 3 lines and no partial one", n, err)
	}
}
