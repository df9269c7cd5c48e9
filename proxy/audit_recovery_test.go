package proxy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/rules"
)

// newFileEnv is newEnv with a file audit log in dir that rotates before
// every line, so every write needs the directory.
func newFileEnv(t *testing.T, dir string, required bool) *env {
	t.Helper()
	pool, rec := startUpstream(t)
	p, err := rules.Compile(rules.Spec{Global: allowAll, Servers: map[string]rules.ServerSpec{"up": {}}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := audit.OpenFile(filepath.Join(dir, "audit.jsonl"), audit.FileOptions{MaxBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	log := audit.New(s, audit.Config{Required: required})
	t.Cleanup(func() { log.Close() })
	srv, err := New(Options{Upstream: pool, Policy: p, Audit: log})
	if err != nil {
		t.Fatal(err)
	}
	adopt(t, srv)
	return &env{pool: pool, srv: srv, rec: rec}
}

// swapDirForFile moves dir aside and puts a regular file in its place, which
// makes every path through dir fail for root too (chmod would not), and
// returns the function that puts it back.
func swapDirForFile(t *testing.T, dir string) (restore func()) {
	t.Helper()
	if err := os.Rename(dir, dir+".away"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		if err := os.Remove(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(dir+".away", dir); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFailedAuditRotationRecoversForCalls(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		required      bool
		forwardBroken bool // whether calls go through while the log is broken
	}{
		{"with audit required calls are refused while broken and succeed after", true, false},
		{"with audit not required calls go through and auditing resumes", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "logs")
			e := newFileEnv(t, dir, tt.required)
			c := e.client(t)
			if res := testkit.CallTool(t, c, "up__echo", map[string]any{"text": "before"}); res.IsError {
				t.Fatalf("call before: %+v", res)
			}
			restore := swapDirForFile(t, dir)
			for range 3 {
				res := testkit.CallTool(t, c, "up__echo", map[string]any{"text": "broken"})
				if res.IsError == tt.forwardBroken {
					t.Errorf("call while broken: isError %v, want %v: %+v", res.IsError, !tt.forwardBroken, res.Content)
				}
			}
			restore()
			for range 3 {
				if res := testkit.CallTool(t, c, "up__echo", map[string]any{"text": "after"}); res.IsError {
					t.Errorf("call after the directory came back refused: %+v", res.Content)
				}
			}
			want := 4
			if tt.forwardBroken {
				want = 7
			}
			if got := len(e.rec.Arguments()); got != want {
				t.Errorf("upstream got %d calls, want %d", got, want)
			}
			files, err := audit.Files(filepath.Join(dir, "audit.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			n, err := audit.Verify(files...)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			// 4 audited calls (a decision and a result each) and one lost
			// event; the required log refused each broken call at its
			// decision, the other lost a decision and a result of each.
			if n != 9 {
				t.Errorf("log has %d lines, want 9", n)
			}
			var lost audit.Event
			for _, f := range files {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(string(b), `"event":"lost"`) {
					if err := json.Unmarshal(b, &lost); err != nil {
						t.Fatal(err)
					}
				}
			}
			wantLost := int64(3)
			if tt.forwardBroken {
				wantLost = 6
			}
			if lost.Lost != wantLost {
				t.Errorf("lost event %+v, want lost %d", lost, wantLost)
			}
		})
	}
}
