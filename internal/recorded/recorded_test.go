package recorded

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/rules"
)

// line is a decision event's line for tool with args (JSON) and extra
// fields (JSON object members, may be "").
func line(tool, args, extra string) string {
	server, _, _ := strings.Cut(strings.TrimPrefix(tool, "mcp:"), ":")
	s := `{"time":"2026-12-06T07:00:00Z","event":"decision","id":"x","server":"` + server + `","tool":"` + tool + `","decision":"ask","rule":"default"`
	if args != "" {
		s += `,"arguments":` + args
	}
	if extra != "" {
		s += "," + extra
	}
	return s + `,"prev_sha256":""}` + "\n"
}

func write(t *testing.T, path string, lines ...string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
}

func readAll(t *testing.T, paths ...string) []Request {
	t.Helper()
	var out []Request
	if err := Read(paths, func(r Request) error { out = append(out, r); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestReadFollowsRotatedFilesInChainOrder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "audit.jsonl")
	write(t, filepath.Join(dir, "audit-000002.jsonl"), line("mcp:fs:b", "", ""))
	write(t, filepath.Join(dir, "audit-000001.jsonl"), line("mcp:fs:a", "", ""))
	write(t, log, line("mcp:fs:c", "", ""), `{"time":"2026-12-06T07:00:00Z","event":"result","id":"y","server":"fs","tool":"mcp:fs:c","prev_sha256":""}`+"\n")
	other := filepath.Join(t.TempDir(), "replica-b.jsonl")
	write(t, other, line("mcp:fs:d", "", ""))
	var got []string
	for _, r := range readAll(t, log, other, filepath.Join(dir, "audit-000001.jsonl")) {
		got = append(got, r.Call.Tool+"@"+filepath.Base(r.Where))
	}
	want := []string{"a@audit-000001.jsonl:1", "b@audit-000002.jsonl:1", "c@audit.jsonl:1", "d@replica-b.jsonl:1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestReadReadsWhatWasDecided(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		line string
		want Request
	}{
		{"shadow is read by its JSON name",
			line("mcp:fs:read_file", `{"path":"/a"}`, `"shadow":true`),
			Request{Call: rules.Call{Server: "fs", Tool: "read_file", Arguments: map[string]any{"path": "/a"}}, Decision: "ask", Rule: "default", Shadow: true}},
		{"granted_by shadow is shadow mode too",
			line("mcp:fs:read_file", "", `"granted_by":"shadow"`),
			Request{Call: rules.Call{Server: "fs", Tool: "read_file", Arguments: map[string]any{}}, Decision: "ask", Rule: "default", GrantedBy: audit.GrantedByShadow, Shadow: true}},
		{"numbers are read as written",
			line("mcp:fs:head", `{"path":"/a","n":10,"big":12345678901234567890}`, ""),
			Request{Call: rules.Call{Server: "fs", Tool: "head", Arguments: map[string]any{"path": "/a", "n": json.Number("10"), "big": json.Number("12345678901234567890")}}, Decision: "ask", Rule: "default"}},
		{"a connection's host and port are read as the proxy decides them",
			line("mcp:fs:network/connect", `{"host":"Registry.NPMjs.org.","port":443}`, ""),
			Request{Call: rules.Call{Server: "fs", Tool: "network/connect", Arguments: map[string]any{"host": "registry.npmjs.org", "port": json.Number("443")}}, Decision: "ask", Rule: "default"}},
		{"a profile, principal, outcome and who settled it",
			line("mcp:fs:write_file", "", `"profile":"ci","principal":"token:ab","granted_by":"user_denied","outcome":"refused"`),
			Request{Call: rules.Call{Server: "fs", Tool: "write_file", Arguments: map[string]any{}, Profile: "ci", Principal: "token:ab"}, Decision: "ask", Rule: "default", GrantedBy: audit.GrantedByUserDenied, Outcome: audit.OutcomeRefused}},
		{"a session and the request that armed a flow rule",
			line("mcp:fs:send", "", `"session":"s1","armed_by":"f1"`),
			Request{Call: rules.Call{Server: "fs", Tool: "send", Arguments: map[string]any{}}, Session: "s1", ArmedBy: "f1", Decision: "ask", Rule: "default"}},
		{"redacted values are reported by key",
			line("mcp:fs:write_file", `{"path":"/a","content":"x <redacted: 900 chars>","opts":{"token":"<redacted>"},"list":["<redacted>"]}`, ""),
			Request{Call: rules.Call{Server: "fs", Tool: "write_file", Arguments: map[string]any{"path": "/a", "content": "x <redacted: 900 chars>", "opts": map[string]any{"token": "<redacted>"}, "list": []any{"<redacted>"}}},
				Decision: "ask", Rule: "default", Redacted: []string{"content", "list[]", "opts.token"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got []Request
			err := ReadFrom(strings.NewReader(tt.line), "a.jsonl", false, func(r Request) error { got = append(got, r); return nil })
			if err != nil {
				t.Fatal(err)
			}
			tt.want.ID, tt.want.Where = "x", "a.jsonl:1"
			if diff := cmp.Diff([]Request{tt.want}, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestTornAndForeignLines: a last line without its newline is skipped
// (it may be being written); a line that is not JSON is an error naming
// the file and line; events other than decisions, and decisions naming no
// tool of their server, are not requests.
func TestTornAndForeignLines(t *testing.T) {
	t.Parallel()
	in := line("mcp:fs:a", "", "") +
		`{"time":"2026-12-06T07:00:00Z","event":"decision","id":"g","server":"fs","decision":"deny","prev_sha256":""}` + "\n" +
		`{"time":"2026-12-06T07:00:00Z","event":"decision","id":"h","server":"fs","tool":"mcp:other:a","prev_sha256":""}` + "\n" +
		`{"time":"2026-12-06T07:00:00Z","event":"decis`
	var got []string
	if err := ReadFrom(strings.NewReader(in), "a.jsonl", false, func(r Request) error { got = append(got, r.Canonical()); return nil }); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"mcp:fs:a"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	err := ReadFrom(strings.NewReader(line("mcp:fs:a", "", "")+"not json\n"), "dir/a.jsonl", false, func(Request) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "dir/a.jsonl") || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("a line that is not JSON: %v, want an error naming dir/a.jsonl line 2", err)
	}
}

// TestTailReadsTheLastEventsOfALogBeingWritten: Tail reads a log that
// audit.Log writes, from a byte bound that falls mid-line, and keeps the
// last max requests.
func TestTailReadsTheLastEventsOfALogBeingWritten(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := audit.Open(audit.Config{Path: path, Unsigned: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		e := audit.Event{Event: audit.KindDecision, Server: "fs", Tool: "mcp:fs:t" + string(rune('a'+i%26)), Decision: audit.DecisionAllow, Rule: "default"}
		if err := l.Write(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lineLen := int64(bytes.IndexByte(data, '\n') + 1)
	got, err := Tail(path, 10*lineLen+lineLen/2, 7)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 7 || got[6].Call.Tool != "tx" || got[0].Call.Tool != "tr" {
		var tools []string
		for _, r := range got {
			tools = append(tools, r.Call.Tool)
		}
		t.Errorf("Tail = %v, want the last 7 (tr … tx)", tools)
	}
	if got, err := Tail(filepath.Join(t.TempDir(), "none.jsonl"), 100, 7); err != nil || got != nil {
		t.Errorf("Tail of a missing log = %v, %v; want none", got, err)
	}
}

// FuzzReadFrom: whatever the log holds, reading it never panics, and
// every request it yields names its server and tool.
func FuzzReadFrom(f *testing.F) {
	f.Add([]byte(line("mcp:fs:read_file", `{"path":"/a","n":1}`, `"shadow":true`)), false)
	f.Add([]byte(line("mcp:fs:network/connect", `{"host":"[::1]","port":"80"}`, "")), true)
	f.Add([]byte(line("mcp:fs:x", `{"a":{"b":["<redacted>",{"c":null}]}}`, `"shadow":"yes"`)+"{\n"), false)
	f.Fuzz(func(t *testing.T, data []byte, skipFirst bool) {
		_ = ReadFrom(bytes.NewReader(data), "fuzz.jsonl", skipFirst, func(r Request) error {
			if r.Call.Server == "" || r.Call.Tool == "" || r.Call.Arguments == nil {
				t.Fatalf("request without server, tool or arguments: %+v", r)
			}
			_ = r.String()
			return nil
		})
	})
}
