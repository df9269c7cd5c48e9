package audit

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseSince(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in      string
		want    time.Time
		wantErr bool
	}{
		{"1h", now.Add(-time.Hour), false},
		{"90m", now.Add(-90 * time.Minute), false},
		{"7d", now.Add(-7 * 24 * time.Hour), false},
		{"2026-03-01T10:00:00Z", time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), false},
		{"2026-03-01", time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), false},
		{"-1h", time.Time{}, true},
		{"yesterday", time.Time{}, true},
	}
	for _, tt := range tests {
		got, err := ParseSince(tt.in, now)
		if (err != nil) != tt.wantErr || !got.Equal(tt.want) {
			t.Errorf("ParseSince(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestFilterMatch(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	e := Event{Time: t0, Event: KindDecision, Server: "fs", Decision: DecisionDeny, Session: "s"}
	tests := []struct {
		name   string
		filter Filter
		want   bool
	}{
		{"the empty filter matches", Filter{}, true},
		{"a matching server", Filter{Server: "fs"}, true},
		{"another server", Filter{Server: "gh"}, false},
		{"another decision", Filter{Decision: DecisionAllow}, false},
		{"another kind", Filter{Event: KindResult}, false},
		{"since before the event", Filter{Since: t0.Add(-time.Second)}, true},
		{"since after the event", Filter{Since: t0.Add(time.Second)}, false},
		{"all fields matching", Filter{Server: "fs", Decision: DecisionDeny, Event: KindDecision, Session: "s", Since: t0}, true},
	}
	for _, tt := range tests {
		if got := tt.filter.Match(e); got != tt.want {
			t.Errorf("%s: Match = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestFormat(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 10, 12, 0, 0, 5e6, time.UTC)
	dur, isErr, size := int64(42), true, int64(10)
	tests := []struct {
		name string
		e    Event
		want string
	}{
		{"a decision", Event{Time: t0, Event: KindDecision, Tool: "mcp:fs:write_file", Decision: DecisionAsk, Rule: "mcp:fs:write_file", GrantedBy: GrantedByUserOnce, Session: "s1", Client: &Client{Name: "cursor", Version: "1.2"}, Arguments: map[string]any{"path": "/a"}},
			`2026-03-10T12:00:00.005Z decision      ASK   mcp:fs:write_file rule=mcp:fs:write_file by=user_once session=s1 client=cursor/1.2 args={"path":"/a"}`},
		{"a result", Event{Time: t0, Event: KindResult, Tool: "mcp:fs:write_file", DurationMS: &dur, IsError: &isErr, ResultBytes: &size, ResultPreview: "no space left"},
			`2026-03-10T12:00:00.005Z result        mcp:fs:write_file 42ms ERROR 10B preview="no space left"`},
		{"an upstream crash", Event{Time: t0, Event: KindUpstream, Server: "fs", Detail: UpstreamCrash, Error: "exit status 1"},
			`2026-03-10T12:00:00.005Z upstream      fs crash error="exit status 1"`},
		{"a replica's decision names it last", Event{Time: t0, Event: KindDecision, Tool: "mcp:fs:read", Decision: DecisionAllow, Rule: "mcp:fs:*", GrantedBy: GrantedByRule, Replica: "mcpwarden-7d9f-x2"},
			`2026-03-10T12:00:00.005Z decision      ALLOW mcp:fs:read rule=mcp:fs:* by=rule replica=mcpwarden-7d9f-x2`},
		{"a decision shadow mode let through says what would have been", Event{Time: t0, Event: KindDecision, Tool: "mcp:fs:delete", Decision: DecisionDeny, Rule: "mcp:fs:delete", Shadow: true, GrantedBy: GrantedByShadow, Outcome: OutcomeAllowed},
			`2026-03-10T12:00:00.005Z decision      ALLOW (shadow: would deny) mcp:fs:delete rule=mcp:fs:delete by=shadow outcome=allowed`},
		{"an allow in shadow mode is marked", Event{Time: t0, Event: KindDecision, Tool: "mcp:fs:read", Decision: DecisionAllow, Rule: "mcp:fs:read", Shadow: true, GrantedBy: GrantedByRule},
			`2026-03-10T12:00:00.005Z decision      ALLOW (shadow) mcp:fs:read rule=mcp:fs:read by=rule`},
		{"a policy change names both policies and its counts", Event{Time: t0, Event: KindPolicyChanged, PolicySHA256: "ab12", PreviousPolicySHA256: "cd34", Changed: 3, Widened: 1, Detail: "3 of 40 recent decisions change"},
			`2026-03-10T12:00:00.005Z policy_changed changed=3 widened=1 policy=ab12 previous=cd34 "3 of 40 recent decisions change"`},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, Format(tt.e)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestReadEventsReportsBadAndIncompleteLines(t *testing.T) {
	t.Parallel()
	in := `{"event":"decision","tool":"a","prev_sha256":""}` + "\nnot json\n" + `{"event":"res`
	var got []string
	off, err := ReadEvents(strings.NewReader(in), func(n int, line []byte, e Event, err error) error {
		switch {
		case errors.Is(err, ErrIncompleteLine):
			got = append(got, "incomplete")
		case err != nil:
			got = append(got, "bad:"+string(line))
		default:
			got = append(got, e.Tool)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "bad:not json", "incomplete"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if want := int64(strings.LastIndex(in, "\n") + 1); off != want {
		t.Errorf("offset = %d, want %d", off, want)
	}
}

func TestFollowSeesNewLinesAcrossRotation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		pause, poll time.Duration
	}{
		{"lines written between polls", 2 * time.Millisecond, 5 * time.Millisecond},
		{"a burst of rotations between two polls", 0, 50 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// In a bubble the polls and pauses run on a fake clock, so
			// a burst of writes is between two polls however slow the
			// machine.
			synctest.Test(t, func(t *testing.T) { testFollow(t, tt.pause, tt.poll) })
		})
	}
}

func testFollow(t *testing.T, pause, poll time.Duration) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, err := OpenFile(path, FileOptions{MaxBytes: 600})
	if err != nil {
		t.Fatal(err)
	}
	l := New(s, Config{})
	defer l.Close()

	ctx, cancel := context.WithCancel(t.Context())
	var (
		mu   sync.Mutex
		seen []string
	)
	const events = 12
	done := make(chan error, 1)
	go func() {
		done <- Follow(ctx, path, 0, poll, func(line []byte) error {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, hashLine(line))
			if len(seen) == events {
				cancel()
			}
			return nil
		})
	}()
	var want []string
	for i := range events {
		if err := l.Write(t.Context(), decisionEvent(i)); err != nil {
			t.Fatal(err)
		}
		want = append(want, string(l.prev))
		if i == 0 {
			// Follow starts at the current file: let it open it first.
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
				mu.Lock()
				n := len(seen)
				mu.Unlock()
				if n == 1 || time.Now().After(deadline) {
					break
				}
			}
		}
		time.Sleep(pause)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		cancel()
		<-done
		mu.Lock()
		t.Logf("saw %d of %d lines", len(seen), events)
		mu.Unlock()
		t.Fatal("Follow did not see every line")
	}
	if files, _ := Files(path); len(files) < 2 {
		t.Fatalf("no rotation happened: %v", files)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("lines seen (-want +got):\n%s", diff)
	}
}

func TestFilterOnOutcomeCountsEveryApprovalAndRefusal(t *testing.T) {
	t.Parallel()
	events := []Event{
		{Event: KindDecision, Decision: DecisionAsk, GrantedBy: GrantedByApprovalCLI, Outcome: OutcomeAllowed},
		{Event: KindDecision, Decision: DecisionAsk, GrantedBy: GrantedByApprovalCLI, Outcome: OutcomeRefused},
		{Event: KindDecision, Decision: DecisionAsk, GrantedBy: GrantedByTimeout, Outcome: OutcomeRefused},
		{Event: KindResult, GrantedBy: GrantedByUserOnce, Outcome: OutcomeAllowed},
		{Event: KindDecision, Decision: DecisionAllow, GrantedBy: GrantedByRule},
		{Event: KindDecision, Decision: DecisionDeny, Shadow: true, GrantedBy: GrantedByShadow, Outcome: OutcomeAllowed},
	}
	count := func(o Outcome) int {
		n := 0
		for _, e := range events {
			if (Filter{Outcome: o}).Match(e) {
				n++
			}
		}
		return n
	}
	if a, r := count(OutcomeAllowed), count(OutcomeRefused); a != 3 || r != 2 {
		t.Errorf("allowed %d refused %d, want 3 (one let through by shadow mode) and 2", a, r)
	}
	if got := Format(events[1]); !strings.Contains(got, "outcome=refused") || !strings.Contains(got, "by=approval_cli") {
		t.Errorf("Format = %q, want the outcome and who settled it", got)
	}
}
