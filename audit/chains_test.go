package audit

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeReplicaLog writes n events as replica id into dir/<name> and
// returns the log's path.
func writeReplicaLog(t *testing.T, dir, name, id string, n int) string {
	t.Helper()
	path := filepath.Join(dir, name)
	l, err := Open(Config{Path: path}, &Options{Replica: id})
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
	return path
}

func TestEveryEventCarriesItsReplica(t *testing.T) {
	t.Parallel()
	s := &failingSink{ok: 1}
	l, err := Open(Config{Sink: SinkNone}, &Options{Replica: "mcpwarden-0"})
	if err != nil {
		t.Fatal(err)
	}
	l.sink = s // the configured replica, with a sink that fails on demand
	for i := range 2 {
		_ = l.Write(t.Context(), decisionEvent(i)) // the second is lost
	}
	s.mu.Lock()
	s.ok = 3
	s.mu.Unlock()
	if err := l.Write(t.Context(), Event{Event: KindUpstream, Server: "fs", Detail: UpstreamConnect}); err != nil {
		t.Fatal(err)
	}
	if len(s.got) != 3 {
		t.Fatalf("sink got %d lines, want 3 (decision, lost, upstream)", len(s.got))
	}
	for i, line := range s.got {
		if !strings.Contains(string(line), `"replica":"mcpwarden-0"`) {
			t.Errorf("line %d = %s, want replica mcpwarden-0", i+1, line)
		}
	}
}

func TestEventCannotClaimAnotherReplica(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "a.jsonl")
	l, err := Open(Config{Path: path}, &Options{Replica: "a"})
	if err != nil {
		t.Fatal(err)
	}
	e := decisionEvent(0)
	e.Replica = "b" // a caller (or a bug) naming another replica
	if err := l.Write(t.Context(), e); err != nil {
		t.Fatal(err)
	}
	l.Close()
	got := readLines(t, path)
	if len(got) != 1 || !strings.Contains(got[0], `"replica":"a"`) || strings.Contains(got[0], `"b"`) {
		t.Errorf("line = %q, want replica a only", got)
	}

	// Without a replica id of its own a Log writes none, whatever the caller says.
	path = filepath.Join(dir, "none.jsonl")
	l, err = Open(Config{Path: path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Write(t.Context(), e); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if got := readLines(t, path); strings.Contains(got[0], `"replica"`) {
		t.Errorf("line = %q, want no replica", got[0])
	}
}

func TestVerifyChainsChecksEachReplicaLogOnItsOwn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := writeReplicaLog(t, dir, "a.jsonl", "a", 3)
	b := writeReplicaLog(t, dir, "b.jsonl", "b", 5)
	res, err := VerifyChains(VerifyOptions{}, Chain{Name: a, Files: []string{a}}, Chain{Name: b, Files: []string{b}})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct {
		lines   int
		replica string
	}{{3, "a"}, {5, "b"}} {
		if res[i].Lines != want.lines || !slices.Equal(res[i].Replicas, []string{want.replica}) {
			t.Errorf("chain %d: %d lines of replicas %q, want %d of %q", i, res[i].Lines, res[i].Replicas, want.lines, want.replica)
		}
	}
	// One chain through both is what the logs are not.
	if _, err := Verify(a, b); !errors.Is(err, ErrChainBroken) {
		t.Errorf("Verify(a, b) as one chain = %v, want a broken chain", err)
	}
}

func TestLineMovedBetweenReplicaLogsBreaksBothChains(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := writeReplicaLog(t, dir, "a.jsonl", "a", 4)
	b := writeReplicaLog(t, dir, "b.jsonl", "b", 4)
	la, lb := readLines(t, a), readLines(t, b)
	// The third line of a, a call someone wants hidden, moves into b's log.
	moved := la[2]
	la = append(la[:2], la[3:]...)
	lb = append(lb[:2], append([]string{moved}, lb[2:]...)...)
	for path, lines := range map[string][]string{a: la, b: lb} {
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	res, err := VerifyChains(VerifyOptions{}, Chain{Name: a, Files: []string{a}}, Chain{Name: b, Files: []string{b}})
	if err == nil {
		t.Fatal("VerifyChains accepted a line moved from one replica's log to another's")
	}
	for i, wantLine := range []int{3, 3} {
		var ve *VerifyError
		if !errors.As(res[i].Err, &ve) || ve.Line != wantLine || !errors.Is(ve, ErrChainBroken) {
			t.Errorf("chain %s: %v, want a broken chain at line %d", res[i].Chain.Name, res[i].Err, wantLine)
		}
	}
	for _, name := range []string{a, b} {
		if !strings.Contains(err.Error(), "chain "+name+":") {
			t.Errorf("error %q does not name chain %s", err, name)
		}
	}
}

func TestReplicaLogAppendedToAnotherBreaksAtTheSplice(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := writeReplicaLog(t, dir, "a.jsonl", "a", 3)
	b := writeReplicaLog(t, dir, "b.jsonl", "b", 3)
	lb, err := os.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(a, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(lb); err != nil {
		t.Fatal(err)
	}
	f.Close()
	res, err := VerifyChains(VerifyOptions{}, Chain{Name: a, Files: []string{a}})
	var ve *VerifyError
	if !errors.As(err, &ve) || ve.Line != 4 {
		t.Errorf("a log with another replica's log appended: %v, want a broken chain at line 4", err)
	}
	if !slices.Equal(res[0].Replicas, []string{"a", "b"}) {
		t.Errorf("replicas seen = %q, want a then b", res[0].Replicas)
	}
}

func TestVerifyChainsKeepsGoingAfterABadChain(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "missing.jsonl")
	good := writeReplicaLog(t, dir, "good.jsonl", "good", 2)
	res, err := VerifyChains(VerifyOptions{}, Chain{Name: bad, Files: []string{bad}}, Chain{Name: good, Files: []string{good}})
	if err == nil || res[0].Err == nil {
		t.Fatalf("a missing log verified: %v", err)
	}
	if res[1].Err != nil || res[1].Lines != 2 {
		t.Errorf("the good log after it: %d lines, %v; want 2, nil", res[1].Lines, res[1].Err)
	}
}

func TestVerifyChainsRefusesOnePrevForTwoChains(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := writeReplicaLog(t, dir, "a.jsonl", "a", 1)
	b := writeReplicaLog(t, dir, "b.jsonl", "b", 1)
	if _, err := VerifyChains(VerifyOptions{Prev: "ab"}, Chain{Name: a, Files: []string{a}}, Chain{Name: b, Files: []string{b}}); err == nil {
		t.Error("VerifyChains took one prev_sha256 for two chains")
	}
	if _, err := VerifyChains(VerifyOptions{}); err == nil {
		t.Error("VerifyChains of nothing succeeded")
	}
}

func TestSharedReplicasNamesAnIDInTwoLogs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var chains []Chain
	for _, l := range []struct{ name, id string }{{"a1.jsonl", "a"}, {"b.jsonl", "b"}, {"a2.jsonl", "a"}, {"none.jsonl", ""}} {
		p := writeReplicaLog(t, dir, l.name, l.id, 1)
		chains = append(chains, Chain{Name: l.name, Files: []string{p}})
	}
	res, err := VerifyChains(VerifyOptions{}, chains...)
	if err != nil {
		t.Fatal(err)
	}
	got := SharedReplicas(res)
	if len(got) != 1 || !slices.Equal(got["a"], []string{"a1.jsonl", "a2.jsonl"}) {
		t.Errorf("SharedReplicas = %v, want a in a1.jsonl and a2.jsonl", got)
	}
}
