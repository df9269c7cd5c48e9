package upstream

import (
	"bufio"
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
)

// A streamScript is a misbehaving streamable HTTP peer: the first request
// (the POST or GET a test sends) is answered with first, then every GET
// carrying Last-Event-ID with the next of resumed. An answer ending in
// "!break" is cut there, the connection dropped mid-stream; one that is
// a number alone is that HTTP status. The peer is not what is tested: it
// plays the server's side of resumption exactly as a test needs it.
type streamScript struct {
	first   string
	resumed []string

	mu   sync.Mutex
	from []string // the Last-Event-ID of each GET
}

func (s *streamScript) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	answer := s.first
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		s.mu.Lock()
		s.from = append(s.from, id)
		n := len(s.from)
		s.mu.Unlock()
		if n > len(s.resumed) {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		answer = s.resumed[n-1]
	}
	switch answer {
	case "404", "503":
		w.WriteHeader(map[string]int{"404": http.StatusNotFound, "503": http.StatusServiceUnavailable}[answer])
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	text, cut := strings.CutSuffix(answer, "!break")
	io.WriteString(w, text)
	w.(http.Flusher).Flush()
	if cut {
		panic(http.ErrAbortHandler) // drops the connection, the body unfinished
	}
}

func (s *streamScript) resumedFrom() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.from)
}

// readStream sends method to the peer through a resumingTransport, with
// the protocol version header version if not empty, and reads the whole
// answer.
func readStream(t *testing.T, s *streamScript, method, version string) (string, error) {
	t.Helper()
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	c := &http.Client{Transport: &resumingTransport{base: hs.Client().Transport, logger: slog.New(slog.DiscardHandler)}}
	req, err := http.NewRequestWithContext(t.Context(), method, hs.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if version != "" {
		req.Header.Set("Mcp-Protocol-Version", version)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

func TestBrokenStreamIsResumedWithoutRepeatingOrSplittingAnEvent(t *testing.T) {
	t.Parallel()
	s := &streamScript{
		first:   "id: 1\ndata: one\n\nid: 2\ndata: tw!break",
		resumed: []string{"id: 2\ndata: two\n\nid: 3\ndata: three\n\n"},
	}
	got, err := readStream(t, s, http.MethodPost, "2025-11-25")
	if err != nil {
		t.Fatalf("reading the stream: %v", err)
	}
	if want := "id: 1\ndata: one\n\nid: 2\ndata: two\n\nid: 3\ndata: three\n\n"; got != want {
		t.Errorf("the reader got %q, want %q: each event once and whole", got, want)
	}
	if from := s.resumedFrom(); !slices.Equal(from, []string{"1"}) {
		t.Errorf("Last-Event-ID sent = %q, want the last whole event's, 1", from)
	}
}

func TestStreamBrokenAgainIsResumedFromItsNewLastEvent(t *testing.T) {
	t.Parallel()
	s := &streamScript{
		first:   "id: 1\ndata: one\n\n!break",
		resumed: []string{"id: 2\ndata: two\n\n!break", "id: 3\ndata: three\n\n"},
	}
	got, err := readStream(t, s, http.MethodPost, "")
	if err != nil {
		t.Fatalf("reading the stream: %v", err)
	}
	if want := "id: 1\ndata: one\n\nid: 2\ndata: two\n\nid: 3\ndata: three\n\n"; got != want {
		t.Errorf("the reader got %q, want %q", got, want)
	}
	if from := s.resumedFrom(); !slices.Equal(from, []string{"1", "2"}) {
		t.Errorf("Last-Event-ID sent = %q, want 1 then 2", from)
	}
}

func TestListeningStreamEndedByTheServerIsResumed(t *testing.T) {
	t.Parallel()
	// A server may end the GET stream to be polled; a fresh GET would lose
	// what it sends until then. Once it refuses to resume (404: the
	// session is gone), the reader sees the stream end, and mcp-go's
	// listener takes over.
	s := &streamScript{
		first:   "retry: 10\nid: a\ndata: x\n\n",
		resumed: []string{"id: b\ndata: y\n\n"},
	}
	got, err := readStream(t, s, http.MethodGet, "2025-11-25")
	if err != nil {
		t.Fatalf("reading the stream: %v", err)
	}
	if want := "retry: 10\nid: a\ndata: x\n\nid: b\ndata: y\n\n"; got != want {
		t.Errorf("the reader got %q, want %q", got, want)
	}
	if from := s.resumedFrom(); !slices.Equal(from, []string{"a", "b"}) {
		t.Errorf("Last-Event-ID sent = %q, want a then b", from)
	}
}

func TestCallStreamEndedByTheServerIsLeftToTheClient(t *testing.T) {
	t.Parallel()
	// mcp-go resumes a call's stream that the server ended before the
	// answer, and knows whether the answer came: a second resumer would
	// poll a finished stream.
	s := &streamScript{first: "id: 1\ndata: one\n\n", resumed: []string{"id: 2\ndata: two\n\n"}}
	got, err := readStream(t, s, http.MethodPost, "2025-11-25")
	if err != nil || got != "id: 1\ndata: one\n\n" {
		t.Errorf("the reader got %q, %v, want the stream as it came, ended", got, err)
	}
	if from := s.resumedFrom(); len(from) != 0 {
		t.Errorf("Last-Event-ID sent = %q, want no GET", from)
	}
}

func TestBrokenStreamIsNotResumedWhen(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		script     *streamScript
		version    string
		wantTries  int
		wantPassed string
	}{
		{
			name:       "the server gave no event id",
			script:     &streamScript{first: "data: one\n\n!break"},
			wantPassed: "data: one\n\n",
		},
		{
			name:       "the protocol is 2026-07-28, which dropped resumption",
			script:     &streamScript{first: "id: 1\ndata: one\n\n!break"},
			version:    "2026-07-28",
			wantPassed: "id: 1\ndata: one\n\n",
		},
		{
			name:       "the server refuses the event id",
			script:     &streamScript{first: "id: 1\ndata: one\n\n!break", resumed: []string{"404"}},
			wantTries:  1,
			wantPassed: "id: 1\ndata: one\n\n",
		},
		{
			name:       "the server keeps failing, after five tries",
			script:     &streamScript{first: "retry: 1\nid: 1\ndata: one\n\n!break", resumed: []string{"503", "503", "503", "503", "503", "503"}},
			wantTries:  maxResumeFailures,
			wantPassed: "retry: 1\nid: 1\ndata: one\n\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := readStream(t, tt.script, http.MethodPost, tt.version)
			if err == nil {
				t.Errorf("the stream read %q without an error, want it to break", got)
			}
			if got != tt.wantPassed {
				t.Errorf("the reader got %q, want %q", got, tt.wantPassed)
			}
			if tries := len(tt.script.resumedFrom()); tries != tt.wantTries {
				t.Errorf("%d GETs with Last-Event-ID, want %d", tries, tt.wantTries)
			}
		})
	}
}

func TestFailingServerIsAskedAgainUntilItResumes(t *testing.T) {
	t.Parallel()
	s := &streamScript{
		first:   "retry: 1\nid: 1\ndata: one\n\n!break",
		resumed: []string{"503", "503", "id: 2\ndata: two\n\n"},
	}
	got, err := readStream(t, s, http.MethodPost, "")
	if want := "retry: 1\nid: 1\ndata: one\n\nid: 2\ndata: two\n\n"; err != nil || got != want {
		t.Errorf("the reader got %q, %v, want %q", got, err, want)
	}
}

// FuzzResumingBodyPassesAStreamThroughUnchanged reads any stream that
// ends through a resumingBody of a call's stream, with a buffer small
// enough that lines come in pieces: what the reader gets is the stream,
// byte for byte, so resumption never changes what it does not resume.
func FuzzResumingBodyPassesAStreamThroughUnchanged(f *testing.F) {
	f.Add([]byte("id: 1\ndata: one\n\n"))
	f.Add([]byte("retry: 5\r\nid: 2\r\nevent: message\r\ndata: {\"a\":1}\r\n\r\ndata: tail"))
	f.Add([]byte("id: \x00\n\nid:x\ndata:" + strings.Repeat("y", 40) + "\n\n\n"))
	f.Fuzz(func(t *testing.T, stream []byte) {
		req := httptest.NewRequest(http.MethodPost, "http://upstream/mcp", nil)
		body := io.NopCloser(bytes.NewReader(stream))
		b := &resumingBody{
			t:      &resumingTransport{base: http.DefaultTransport, logger: slog.New(slog.DiscardHandler)},
			req:    req,
			body:   body,
			br:     bufio.NewReaderSize(body, 16),
			closed: make(chan struct{}),
		}
		got, err := io.ReadAll(b)
		if err != nil {
			t.Fatalf("reading: %v", err)
		}
		if !bytes.Equal(got, stream) {
			t.Errorf("got %q, want %q", got, stream)
		}
	})
}
