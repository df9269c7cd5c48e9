package proxy

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/proxy/streamable"
	"github.com/mcpwarden/mcpwarden/rules"
)

// TestDirectCallsLogAsHandleMessage: over HTTP, a tools/call served
// without HandleMessage writes the human log lines mcp-go's request
// logger writes when HandleMessage serves it (mcp.tool, then mcp.request
// with the session), whether the call succeeds or fails; only the
// durations and session ids differ. Neither names the protocol version:
// mcp-go reads it from headers that only its own HTTP server can hand to
// HandleMessage (see package streamable).
func TestDirectCallsLogAsHandleMessage(t *testing.T) {
	t.Parallel()
	spec := rules.Spec{Global: rules.PolicySpec{Allow: []string{"mcp:fs:echo"}, Deny: []string{"mcp:fs:phish", "mcp:hidden:*"}}}
	serve := func(direct bool) func(args map[string]any) []map[string]any {
		var log testkit.LockedBuffer
		e := newCatalogEnv(t, spec, Options{Logger: slog.New(slog.NewJSONHandler(&log, nil))})
		host := httpHost(e.srv)
		if !direct {
			host.Calls = nil
		}
		h, _, err := streamable.NewHandler(host, "127.0.0.1:0", streamable.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(h)
		t.Cleanup(ts.Close)
		session := initializeSession(t, ts)
		return func(args map[string]any) []map[string]any {
			before := len(log.String())
			resp := post(t, ts, session, map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": map[string]any{"name": "fs__echo", "arguments": args}})
			if _, err := io.Copy(io.Discard, resp.Body); err != nil {
				t.Fatal(err)
			}
			var lines []map[string]any
			for _, l := range strings.Split(strings.TrimSpace(log.String()[before:]), "\n") {
				var m map[string]any
				if err := json.Unmarshal([]byte(l), &m); err != nil {
					t.Fatalf("log line %q: %v", l, err)
				}
				if m["msg"] != "mcp.tool" && m["msg"] != "mcp.request" {
					continue
				}
				delete(m, "time")
				delete(m, "duration_s")
				if m["msg"] == "mcp.request" && m["mcp.session.id"] != session {
					t.Errorf("log line %q names session %v, want %s", l, m["mcp.session.id"], session)
				}
				delete(m, "mcp.session.id")
				lines = append(lines, m)
			}
			return lines
		}
	}
	direct, mcpgo := serve(true), serve(false)
	for _, args := range []map[string]any{{"text": "hi"}, {"text": 7}} {
		got, want := direct(args), mcpgo(args)
		if len(want) != 2 {
			t.Fatalf("mcp-go logged %v for the call, want mcp.tool and mcp.request", want)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("arguments %v:\n direct: %v\n mcp-go: %v", args, got, want)
		}
	}
}
