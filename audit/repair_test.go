package audit

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tornLog writes n events to a new log at path and then half of another
// line, as a crash in the middle of a write leaves it.
func tornLog(t *testing.T, path string, n int, torn string) {
	t.Helper()
	l, err := Open(Config{Path: path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := l.Write(t.Context(), decisionEvent(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(torn); err != nil {
		t.Fatal(err)
	}
}

func TestTornLastLineErrorSaysHowToRepair(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	tornLog(t, path, 2, `{"time":"2026-12-03T10:00:00Z","event":"deci`)
	_, err := Open(Config{Path: path}, nil)
	if !errors.Is(err, ErrIncompleteLine) {
		t.Fatalf("Open: got %v, want ErrIncompleteLine", err)
	}
	if want := "run `mcpwarden audit repair " + path + "`"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %s", err, want)
	}
}

func TestRepairMovesTheTornTailAsideAndContinuesTheChain(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		events int
		torn   string
	}{
		{"a torn line after whole lines", 3, `{"time":"2026-12-03T10:00:00Z","event":"deci`},
		{"a log that is only a torn line", 0, `{"time":"2026-12-03T10:00:00Z","ev`},
		{"a torn line longer than a read chunk", 1, `{"arguments":"` + strings.Repeat("x", 20000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			tornLog(t, path, tt.events, tt.torn)
			now := time.Date(2026, 12, 3, 11, 0, 0, 0, time.UTC)
			res, err := Repair(path, now)
			if err != nil {
				t.Fatal(err)
			}
			wantMoved := path + ".torn-20261203T110000Z"
			if res.Torn != path || res.MovedTo != wantMoved || res.TornBytes != int64(len(tt.torn)) {
				t.Errorf("Repair = %+v, want %s moved to %s, %d bytes", res, path, wantMoved, len(tt.torn))
			}
			if b, err := os.ReadFile(wantMoved); err != nil || string(b) != tt.torn {
				t.Errorf("moved tail = %q, %v; want the torn line", b, err)
			}
			if fi, err := os.Stat(wantMoved); err == nil && fi.Mode().Perm() != 0o600 {
				t.Errorf("moved tail has mode %v, want 0600", fi.Mode().Perm())
			}
			if n, err := Verify(path); err != nil || n != tt.events+1 {
				t.Fatalf("Verify after repair = %d, %v; want %d events and the lost event", n, err, tt.events+1)
			}
			events := readEvents(t, []string{path})
			last := events[len(events)-1]
			if last.Event != KindLost || last.Lost != 1 || !strings.Contains(last.Detail, filepath.Base(wantMoved)) || !last.Time.Equal(now) {
				t.Errorf("last event %+v, want a lost event naming %s", last, filepath.Base(wantMoved))
			}
			// mcpwarden starts again and the chain goes on.
			l, err := Open(Config{Path: path}, nil)
			if err != nil {
				t.Fatalf("Open after repair: %v", err)
			}
			if err := l.Write(t.Context(), decisionEvent(9)); err != nil {
				t.Fatal(err)
			}
			l.Close()
			if n, err := Verify(path); err != nil || n != tt.events+2 {
				t.Errorf("Verify after restart = %d, %v", n, err)
			}
		})
	}
}

func TestRepairLeavesAWholeLogAlone(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	tornLog(t, path, 2, "")
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Repair(path, time.Now())
	if err != nil || res.Torn != "" {
		t.Fatalf("Repair = %+v, %v; want nothing done", res, err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Errorf("Repair changed a whole log:\n%s\nwas\n%s", after, before)
	}
}

func TestRepairRefusesALogInUse(t *testing.T) {
	t.Parallel()
	l, path := openTestLog(t, Config{})
	if err := l.Write(t.Context(), decisionEvent(0)); err != nil {
		t.Fatal(err)
	}
	if _, err := Repair(path, time.Now()); !errors.Is(err, ErrLocked) {
		t.Errorf("Repair of a log in use: got %v, want ErrLocked", err)
	}
}
