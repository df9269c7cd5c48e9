package sandbox

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The reference server, a Node program as npx starts them, works in each
// tier with its package directory readable and nothing else added.
func TestServerEverythingWorksSandboxedInEachTier(t *testing.T) {
	t.Parallel()
	modules, err := filepath.Abs("../../.tools/npm/node_modules")
	if err != nil {
		t.Fatal(err)
	}
	entry := filepath.Join(modules, "@modelcontextprotocol/server-everything/dist/index.js")
	if _, err := os.Stat(entry); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("server-everything is not installed (run .ci/setup): %v", err)
		}
		t.Skipf("server-everything is not installed (run .ci/setup): %v", err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node")
	}
	if real, err := filepath.EvalSymlinks(modules); err == nil {
		modules = real
	}
	for _, m := range tiers {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			p := Policy{Tier: m.tier, Exec: []string{modules}, Home: t.TempDir(), TmpDir: t.TempDir()}
			c, err := Command(t.Context(), env.self, p, []string{node, entry, "stdio"})
			if err != nil {
				t.Fatal(err)
			}
			in, _ := c.Cmd.StdinPipe()
			out, _ := c.Cmd.StdoutPipe()
			var stderr strings.Builder
			c.Cmd.Stderr = &stderr
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { in.Close(); c.Wait() }()
			if rep, err := c.Report(t.Context()); err != nil {
				t.Fatalf("report %s: %v", rep, err)
			}
			io.WriteString(in, initializeLine)
			io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
			io.WriteString(in, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"sandboxed"}}}`+"\n")
			r := bufio.NewReader(out)
			for {
				line, err := r.ReadBytes('\n')
				if err != nil {
					t.Fatalf("the server's output ended before the echo: %v", err)
				}
				var msg struct {
					ID     *int            `json:"id"`
					Result json.RawMessage `json:"result"`
				}
				if json.Unmarshal(line, &msg) == nil && msg.ID != nil && *msg.ID == 1 {
					if !strings.Contains(string(msg.Result), "Echo: sandboxed") {
						t.Fatalf("echo answered %s", msg.Result)
					}
					return
				}
			}
		})
	}
}
