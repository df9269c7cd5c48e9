package app

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/config"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// standIn serves one MCP server over streamable HTTP, with an echo tool,
// and returns its URL.
func standIn(t *testing.T) string {
	t.Helper()
	s := testkit.NewStandIn()
	s.AddTool(mcp.NewTool("echo", mcp.WithString("text")), testkit.Echo)
	return s.URL(t)
}

// setupOf writes a config with the given YAML and loads it.
func setupOf(t *testing.T, yaml string) *Setup {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "mcpwarden.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := NewSetup(cfg, dir)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestUpstreamConnectedAtStartIsExposed: the pool starts only once the
// proxy exists, so the connect of an upstream, which may come at once,
// reaches the proxy and its tools are exposed.
func TestUpstreamConnectedAtStartIsExposed(t *testing.T) {
	t.Parallel()
	st := setupOf(t, "servers:\n  up:\n    url: "+standIn(t)+"\naudit:\n  path: audit.jsonl\npolicy:\n  allow: [\"mcp:up:*\"]\n")
	a, err := Start(t.Context(), st, Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	testkit.Eventually(t, 10*time.Second, "up__echo exposed once its server connected", func() bool {
		_, ok := a.srv.Lookup("up__echo")
		return ok
	})
}

func TestReloadThatChangesListenIsRefused(t *testing.T) {
	t.Parallel()
	url := standIn(t)
	st := setupOf(t, "servers:\n  up:\n    url: "+url+"\naudit:\n  path: audit.jsonl\n")
	a, err := Start(t.Context(), st, Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	next := setupOf(t, "listen: 127.0.0.1:0\nservers:\n  up:\n    url: "+url+"\naudit:\n  path: audit.jsonl\n")
	if err := a.Reload(t.Context(), next); err == nil || !strings.Contains(err.Error(), "listen") {
		t.Errorf("a reload that changes listen: %v, want refused naming listen", err)
	}
	if a.setup() != st {
		t.Error("a refused reload replaced the running config")
	}
}

func TestListUpstreamsCountsTheServersThatFailed(t *testing.T) {
	t.Parallel()
	st := setupOf(t, "servers:\n  up:\n    url: "+standIn(t)+"\n  down:\n    url: http://127.0.0.1:1/mcp\n    init_timeout: 2s\n")
	l := ListUpstreams(t.Context(), st, nil, "test")
	defer l.Close()
	if l.Failed() != 1 || len(l.Servers) != 2 {
		t.Fatalf("listing = %+v, want down failed and up listed", l.Servers)
	}
	if up := l.Up(); len(up["up"]) != 1 || up["up"][0].Name != "echo" {
		t.Errorf("Up() = %v, want up's echo", up)
	}
}

func TestReloadThatSwitchesShadowModeSaysSo(t *testing.T) {
	t.Parallel()
	url := standIn(t)
	base := "servers:\n  up:\n    url: " + url + "\naudit:\n  path: audit.jsonl\n"
	var log testkit.LockedBuffer
	a, err := Start(t.Context(), setupOf(t, base), Options{Version: "test", Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if strings.Contains(log.String(), "shadow") {
		t.Errorf("the start-up log of an enforced config speaks of shadow mode:\n%s", log.String())
	}
	if err := a.Reload(t.Context(), setupOf(t, "enforce: shadow\n"+base)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), `level=WARN msg="shadow mode is on`) {
		t.Errorf("a reload to shadow mode did not warn:\n%s", log.String())
	}
	if err := a.Reload(t.Context(), setupOf(t, base)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "shadow mode is off") {
		t.Errorf("a reload back to enforce did not say so:\n%s", log.String())
	}
}
