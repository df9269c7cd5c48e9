package audit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// openTestLog opens a file log in a fresh temp dir.
func openTestLog(t *testing.T, cfg Config) (*Log, string) {
	t.Helper()
	if cfg.Path == "" {
		cfg.Path = filepath.Join(t.TempDir(), "audit.jsonl")
	}
	l, err := Open(cfg, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l, cfg.Path
}

func decisionEvent(i int) Event {
	return Event{
		Event: KindDecision, Session: "s1", Server: "fs", Tool: "mcp:fs:read_file",
		WireName: "fs__read_file", Decision: DecisionAllow, Rule: "mcp:fs:read_*",
		GrantedBy: GrantedByRule, Arguments: map[string]any{"path": fmt.Sprintf("/srv/%d", i)},
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func TestConcurrentWritesKeepLinesWholeAndChained(t *testing.T) {
	t.Parallel()
	l, path := openTestLog(t, Config{})
	const writers, events = 64, 200
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := range events {
				e := decisionEvent(i)
				e.Session = fmt.Sprintf("w%d", w)
				if err := l.Write(t.Context(), e); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Write: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, path)
	if got, want := len(lines), writers*events; got != want {
		t.Fatalf("got %d lines, want %d", got, want)
	}
	perWriter := map[string]int{}
	ids := map[string]bool{}
	for i, line := range lines {
		var e Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("line %d is not one JSON event: %v\n%s", i+1, err, line)
		}
		want := fmt.Sprintf("/srv/%d", perWriter[e.Session])
		if got := e.Arguments["path"]; got != want {
			t.Fatalf("line %d: writer %s events out of order: got path %v, want %s", i+1, e.Session, got, want)
		}
		perWriter[e.Session]++
		if ids[e.ID] {
			t.Fatalf("line %d: duplicate id %s", i+1, e.ID)
		}
		ids[e.ID] = true
	}
	n, err := Verify(path)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if n != writers*events {
		t.Errorf("Verify counted %d lines, want %d", n, writers*events)
	}
}

// failingSink fails every write after the first ok ones.
type failingSink struct {
	mu  sync.Mutex
	ok  int
	got [][]byte
}

func (s *failingSink) Write(_ context.Context, line []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.got) >= s.ok {
		return errors.New("disk on fire")
	}
	s.got = append(s.got, bytes.Clone(line))
	return nil
}

func (s *failingSink) Close() error { return nil }

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("stderr closed") }

func TestWriteReportsSinkErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		log  func(t *testing.T) *Log
	}{
		{"a sink that returns errors", func(t *testing.T) *Log {
			return New(&failingSink{}, Config{Required: true})
		}},
		{"a stderr writer that returns errors", func(t *testing.T) *Log {
			l, err := Open(Config{Sink: SinkStderr, Required: true}, &Options{Stderr: failingWriter{}})
			if err != nil {
				t.Fatal(err)
			}
			return l
		}},
		{"a log whose directory was removed", func(t *testing.T) *Log {
			dir := filepath.Join(t.TempDir(), "logs")
			s, err := OpenFile(filepath.Join(dir, "audit.jsonl"), FileOptions{MaxBytes: 1})
			if err != nil {
				t.Fatal(err)
			}
			l := New(s, Config{Required: true})
			if err := l.Write(t.Context(), decisionEvent(0)); err != nil {
				t.Fatal(err)
			}
			// The next write rotates, which needs the directory.
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			return l
		}},
		{"an http sink answering 500", func(t *testing.T) *Log {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "no", http.StatusInternalServerError)
			}))
			t.Cleanup(srv.Close)
			l, err := Open(Config{URL: srv.URL, Required: true}, &Options{HTTPClient: srv.Client()})
			if err != nil {
				t.Fatal(err)
			}
			return l
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := tt.log(t)
			defer l.Close()
			if err := l.Write(t.Context(), decisionEvent(1)); err == nil {
				t.Error("Write succeeded, want an error")
			}
			if !l.Required() {
				t.Error("Required() = false, want true")
			}
		})
	}
}

func TestOpenUnderARegularFileFails(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// Root ignores permissions, but not a path through a regular file.
	if _, err := Open(Config{Path: filepath.Join(file, "audit.jsonl")}, nil); err == nil {
		t.Fatal("Open succeeded, want an error")
	}
}

func TestFailedWriteIsNotChained(t *testing.T) {
	t.Parallel()
	s := &failingSink{ok: 1}
	l := New(s, Config{})
	if err := l.Write(t.Context(), decisionEvent(0)); err != nil {
		t.Fatal(err)
	}
	if err := l.Write(t.Context(), decisionEvent(1)); err == nil {
		t.Fatal("second Write succeeded, want an error")
	}
	s.mu.Lock()
	s.ok = 3 // the lost event, then event 2
	s.mu.Unlock()
	if err := l.Write(t.Context(), decisionEvent(2)); err != nil {
		t.Fatal(err)
	}
	if len(s.got) != 3 || !bytes.Contains(s.got[1], []byte(`"event":"lost"`)) {
		t.Errorf("sink got %q, want the first event, a lost event, the third event", s.got)
	}
	path := filepath.Join(t.TempDir(), "log.jsonl")
	if err := os.WriteFile(path, bytes.Join(s.got, nil), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(path); err != nil {
		t.Errorf("Verify after a failed write: %v", err)
	}
}

func TestNilLogFailsClosed(t *testing.T) {
	t.Parallel()
	var l *Log
	if err := l.Write(t.Context(), decisionEvent(0)); !errors.Is(err, ErrNoLog) {
		t.Errorf("Write on nil: got %v, want ErrNoLog", err)
	}
	if !l.Required() {
		t.Error("Required on nil = false, want true")
	}
	if l.Redactor() == nil {
		t.Error("Redactor on nil = nil")
	}
	if err := l.Close(); err != nil {
		t.Errorf("Close on nil: %v", err)
	}
}

func TestCloseIsIdempotentAndStopsWrites(t *testing.T) {
	t.Parallel()
	l, _ := openTestLog(t, Config{})
	for range 2 {
		if err := l.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	if err := l.Write(t.Context(), decisionEvent(0)); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close: got %v, want ErrClosed", err)
	}
}

func TestWriteRefusesAnEventWithoutKind(t *testing.T) {
	t.Parallel()
	l := New(DiscardSink{}, Config{})
	if err := l.Write(t.Context(), Event{Tool: "mcp:fs:x"}); err == nil {
		t.Error("Write of an event without kind succeeded")
	}
}

func TestNewWithBadRedactKeysFailsEveryWrite(t *testing.T) {
	t.Parallel()
	l := New(DiscardSink{}, Config{RedactKeys: []string{""}})
	if err := l.Write(t.Context(), decisionEvent(0)); err == nil {
		t.Error("Write succeeded with an invalid redact key")
	}
}

func TestWriteFillsInAndRedactsACopy(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	now := time.Date(2026, 1, 2, 15, 4, 5, 123456789, time.FixedZone("X", 3600))
	l, err := Open(Config{Sink: SinkStderr}, &Options{Stderr: &buf, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	dur, isErr, size := int64(12), false, int64(2048)
	in := Event{
		Event: KindResult, Session: "s", Client: &Client{Name: "claude-code", Version: "1.0"},
		Tool: "mcp:gh:create", Arguments: map[string]any{"title": "x", "token": "ghp_secret"},
		DurationMS: &dur, IsError: &isErr, ResultBytes: &size,
		ResultPreview: "first line\nsecond line", PolicySHA256: "abc",
	}
	before := fmt.Sprintf("%#v %#v", in, in.Arguments)
	if err := l.Write(t.Context(), in); err != nil {
		t.Fatal(err)
	}
	if after := fmt.Sprintf("%#v %#v", in, in.Arguments); after != before {
		t.Errorf("Write modified its event:\nbefore %s\nafter  %s", before, after)
	}
	line := strings.TrimSuffix(buf.String(), "\n")
	var got map[string]any
	if err := json.Unmarshal([]byte(line), &got); err != nil {
		t.Fatal(err)
	}
	id, _ := got["id"].(string)
	if len(id) != 32 {
		t.Errorf("id = %q, want 32 hex digits", id)
	}
	delete(got, "id")
	want := map[string]any{
		"time": "2026-01-02T14:04:05.123456789Z", "event": "result", "session": "s",
		"client": map[string]any{"name": "claude-code", "version": "1.0"},
		"tool":   "mcp:gh:create", "arguments": map[string]any{"title": "x", "token": Redacted},
		"duration_ms": 12.0, "is_error": false, "result_bytes": 2048.0,
		"result_preview": "first line <redacted: 22 chars>", "policy_sha256": "abc", "prev_sha256": "",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("line (-want +got):\n%s", diff)
	}
	if strings.Contains(line, `\u003c`) {
		t.Errorf("line escapes HTML: %s", line)
	}
}

func TestHTTPSinkPostsLinesInOrder(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, string(b))
		mu.Unlock()
	}))
	defer srv.Close()
	l, err := Open(Config{Sink: SinkHTTP, URL: srv.URL}, &Options{HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := l.Write(t.Context(), decisionEvent(i)); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	path := filepath.Join(t.TempDir(), "posted.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(got, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	if n, err := Verify(path); err != nil || n != 3 {
		t.Errorf("Verify of posted lines = %d, %v; want 3, nil", n, err)
	}
}

func TestDiscardSinkStillChecksEvents(t *testing.T) {
	t.Parallel()
	l, err := Open(Config{Sink: SinkNone}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Write(t.Context(), decisionEvent(0)); err != nil {
		t.Error(err)
	}
	if err := l.Write(t.Context(), Event{}); err == nil {
		t.Error("Write of an invalid event to the none sink succeeded")
	}
}

// countLines is used by several tests.
func countLines(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	for sc := bufio.NewScanner(f); sc.Scan(); {
		n++
	}
	return n
}
