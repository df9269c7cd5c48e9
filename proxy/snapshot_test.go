package proxy

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/proxy/naming"
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
// physicalDir returns a temporary directory with its own symlinks resolved,
// so that test paths are physical.
func physicalDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

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
	x := Settings{Policy: compileFS("mcp:fs:*:path=" + app + "/**"), Servers: map[string]ServerOptions{"fs": {ResolveSymlinks: true}}}
	y := Settings{Policy: compileFS("mcp:fs:*")}
	srv, err := New(Options{Upstream: noUpstream{}, Policy: y.Policy, Servers: y.Servers, Audit: audit.New(&memorySink{}, audit.Config{})})
	if err != nil {
		t.Fatal(err)
	}
	tool := naming.Scheme{}.Tool("fs", "read_file")
	req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool.Wire, Arguments: map[string]any{"path": "l/secret.txt"}}}

	reloadWhileDeciding(t, srv, x, y, func() string {
		c := srv.newCall(t.Context(), tool, req)
		if v := srv.decide(t.Context(), c); c.policy == x.Policy && v.Decision != rules.Ask {
			return "a call under X's policy was " + v.Decision.String() + " by " + v.Rule + ": it saw Y's options (symlinks not followed)"
		}
		return ""
	})
}

// reloadWhileDeciding reloads a and b in turn while deciding with decide,
// which reports a call that saw a mixed snapshot.
func reloadWhileDeciding(t *testing.T, srv *Server, a, b Settings, decide func() (mixed string)) {
	t.Helper()
	const reloads = 2000
	var wg sync.WaitGroup
	started, done := make(chan struct{}), make(chan struct{})
	wg.Go(func() {
		defer close(done)
		<-started // so that deciding overlaps the reloads, however the two are scheduled
		for i := range reloads {
			srv.Reload(t.Context(), []Settings{a, b}[i%2], nil)
		}
	})
	wg.Go(func() {
		close(started)
		for {
			if mixed := decide(); mixed != "" {
				t.Error(mixed)
				return
			}
			select {
			case <-done:
				return
			default:
			}
		}
	})
	wg.Wait()
}

// TestSamplingDuringReloadNeverSeesAMixedSnapshot: the next variant, an
// upstream's sampling request. Config X allows every request of up but
// its options deny up's sampling; config Y allows the same and more, and
// denies no sampling. X's policy with Y's options would let up's sampling
// through.
func TestSamplingDuringReloadNeverSeesAMixedSnapshot(t *testing.T) {
	t.Parallel()
	x := Settings{Policy: compile(t, rules.PolicySpec{Allow: []string{"mcp:up:*"}}), Servers: map[string]ServerOptions{"up": {Sampling: rules.SamplingDeny}}}
	y := Settings{Policy: compile(t, rules.PolicySpec{Allow: []string{"mcp:up:*", "mcp:other:*"}})}
	srv, err := New(Options{Upstream: noUpstream{}, Policy: y.Policy, Servers: y.Servers, Audit: audit.New(&memorySink{}, audit.Config{})})
	if err != nil {
		t.Fatal(err)
	}
	method := mcp.MethodSamplingCreateMessage
	reloadWhileDeciding(t, srv, x, y, func() string {
		c := srv.newRequest(t.Context(), "up", method, "up", nil)
		if v := srv.decideFromUpstream(t.Context(), c, "up", method); c.policy == x.Policy && v.Decision != rules.Deny {
			return "a sampling request under X's policy was " + v.Decision.String() + ": it saw Y's options (sampling not denied)"
		}
		return ""
	})
}
