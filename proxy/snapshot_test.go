package proxy

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/rules"
)

// TestCallDuringReloadNeverSeesAMixedSnapshot: a reload swaps the policy
// and the per-server options together, and a call decides under one of
// them whole. Config X allows fs paths inside app and follows symlinks,
// so a path through app/l (a link out of app) is asked; config Y allows
// every fs call without following symlinks. X's policy with Y's options
// would let the path through the link be allowed under X's allow: a call
// that sees that mix is what this test catches, reloading X and Y in turn
// while calls are decided.
func TestCallDuringReloadNeverSeesAMixedSnapshot(t *testing.T) {
	t.Parallel()
	dir := physicalDir(t)
	app, outside := filepath.Join(dir, "app"), filepath.Join(dir, "outside")
	for _, d := range []string{app, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(app, "l")); err != nil {
		t.Fatal(err)
	}
	compileFS := func(allow string) *rules.Policy {
		p, err := rules.Compile(rules.Spec{
			Global:  rules.PolicySpec{Allow: []string{allow}},
			Servers: map[string]rules.ServerSpec{"fs": {Root: app}},
		})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	x := Reload{Policy: compileFS("mcp:fs:*:path=" + app + "/**"), ResolveSymlinks: map[string]bool{"fs": true}}
	y := Reload{Policy: compileFS("mcp:fs:*"), ResolveSymlinks: map[string]bool{}}
	srv, err := New(Options{Upstream: noUpstream{}, Policy: y.Policy, ResolveSymlinks: y.ResolveSymlinks, Audit: audit.New(&memorySink{}, audit.Config{})})
	if err != nil {
		t.Fatal(err)
	}
	tool := Naming{}.Tool("fs", "read_file")
	req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool.Wire, Arguments: map[string]any{"path": "l/secret.txt"}}}

	const reloads = 2000
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Go(func() {
		defer close(done)
		for i := range reloads {
			srv.Reload(t.Context(), []Reload{x, y}[i%2])
		}
	})
	wg.Go(func() {
		for calls := 0; ; calls++ {
			select {
			case <-done:
				if calls == 0 {
					t.Error("no call was decided during the reloads")
				}
				return
			default:
			}
			c := srv.newCall(t.Context(), tool, req)
			v := srv.decide(c)
			if c.policy == x.Policy && v.Decision != rules.Ask {
				t.Errorf("a call under X's policy was %v by %q: it saw Y's options (symlinks not followed)", v.Decision, v.Rule)
				return
			}
		}
	})
	wg.Wait()
}
