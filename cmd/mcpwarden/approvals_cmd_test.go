package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/app"
	"github.com/mcpwarden/mcpwarden/internal/approvals"
	"github.com/mcpwarden/mcpwarden/internal/config"
	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// runCLI runs the whole CLI with args and returns its exit code and output.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := execute(t.Context(), args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

// approvalsConfig writes a config with ask.approvals: local on a free port
// and returns it loaded.
func approvalsConfig(t *testing.T) (path string, cfg *config.Config) {
	t.Helper()
	dir := t.TempDir()
	path = filepath.Join(dir, "mcpwarden.yaml")
	data := "servers:\n  fs:\n    command: \"true\"\nask:\n  approvals: local\n  approvals_listen: 127.0.0.1:0\n  timeout: 5s\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return path, cfg
}

func TestApprovalsCommands(t *testing.T) {
	t.Parallel()
	configPath, cfg := approvalsConfig(t)
	var stderr bytes.Buffer
	resolvers, stop, err := app.StartResolvers(t.Context(), cfg, &stderr, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if len(resolvers) != 1 {
		t.Fatalf("resolvers = %v, want the broker", resolvers)
	}
	broker := resolvers[0].(*approvals.Broker)
	tokenFile, err := cfg.TokenFilePath(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(tokenFile) == cfg.Dir {
		t.Errorf("the token file %s is next to the config, where servers may reach it", tokenFile)
	}
	tf, err := approvals.ReadTokenFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr.String(), tf.PageURL()) {
		t.Errorf("stderr %q does not show the page link", stderr.String())
	}
	if resp, err := http.Get(tf.PageURL()); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET page: %v %v", resp, err)
	}

	ask := func(id string) <-chan approvals.Decision {
		ch := make(chan approvals.Decision, 1)
		go func() {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			d, _ := broker.Resolve(ctx, approvals.Request{ID: id, Tool: "mcp:fs:write_file", Server: "fs", Client: "e2e\x1b[31m 1.0", Rule: "mcp:fs:write_file", Gate: "policy", Arguments: map[string]any{"path": "/tmp/a"}})
			ch <- d
		}()
		return ch
	}
	first, second := ask("aaa111"), ask("bbb222")
	testkit.Eventually(t, 5*time.Second, "the asks to be pending", func() bool { return len(broker.Pending()) >= 2 })

	code, out, errOut := runCLI(t, "approvals", "--config", configPath)
	if code != 0 {
		t.Fatalf("approvals exited %d: %s", code, errOut)
	}
	for _, want := range []string{"aaa111", "bbb222", "mcp:fs:write_file", `"path": "/tmp/a"`, "mcp:fs:write_file (policy)"} {
		if !strings.Contains(out, want) {
			t.Errorf("approvals output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("approvals printed a terminal escape from the client name:\n%q", out)
	}

	if code, out, errOut := runCLI(t, "approve", "aaa111", "--session", "--token-file", tokenFile); code != 0 || !strings.Contains(out, "allowed aaa111 for the session") {
		t.Errorf("approve --session = %d %q %q", code, out, errOut)
	}
	if d := <-first; d.Answer != state.AllowSession || d.Via != approvals.ViaCLI || d.Who == "" {
		t.Errorf("first ask decided %+v", d)
	}
	if code, out, _ := runCLI(t, "deny", "bbb222", "--config", configPath); code != 0 || !strings.Contains(out, "denied bbb222") {
		t.Errorf("deny = %d %q", code, out)
	}
	if d := <-second; d.Answer != state.Deny || d.Via != approvals.ViaCLI {
		t.Errorf("second ask decided %+v", d)
	}
	if code, _, errOut := runCLI(t, "approve", "aaa111", "--token-file", tokenFile); code != 1 || !strings.Contains(errOut, "no such pending ask") {
		t.Errorf("approving a decided ask = %d %q", code, errOut)
	}
	code, out, _ = runCLI(t, "approvals", "--token-file", tokenFile, "--json")
	if code != 0 || !strings.Contains(out, `"outcome": "allow_session"`) || !strings.Contains(out, `"via": "approval_cli"`) {
		t.Errorf("approvals --json = %d\n%s", code, out)
	}

	stop()
	if _, err := os.Stat(tokenFile); !os.IsNotExist(err) {
		t.Errorf("the token file outlived the page: %v", err)
	}
}

func TestApprovalsCommandNeedsAnInstance(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir()) // no instance's token file there
	if code, _, errOut := runCLI(t, "approvals"); code != exitUsage || !strings.Contains(errOut, "--token-file") {
		t.Errorf("approvals without flags = %d %q", code, errOut)
	}
	missing := filepath.Join(t.TempDir(), "none")
	if code, _, errOut := runCLI(t, "approvals", "--token-file", missing); code != exitError || !strings.Contains(errOut, "is mcpwarden serve running") {
		t.Errorf("approvals with a missing token file = %d %q", code, errOut)
	}
}

func TestResolverURLNeedsItsSecret(t *testing.T) {
	t.Parallel()
	cfg := &config.Config{Ask: config.Ask{Resolver: config.AskResolver{URL: "https://resolver.example/", SecretEnv: "WARDEN_TEST_UNSET_SECRET_" + fmt.Sprint(time.Now().UnixNano())}}}
	if _, _, err := app.StartResolvers(t.Context(), cfg, io.Discard, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "secret_env") {
		t.Errorf("StartResolvers without the secret: %v", err)
	}
}
