package e2e

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// newDeployKey writes an RSA private key, PEM-encoded, to path (its name
// says nothing of what it holds) and returns the PEM's body lines.
func newDeployKey(t *testing.T, path string) []string {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	text := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	writeFile(t, path, text)
	lines := strings.Split(strings.TrimSpace(text), "\n")
	return lines[1 : len(lines)-1]
}

// TestExamplesRefuseRoundThreeAttacksLive runs the live examples, with the
// real server-filesystem working in the project (its cwd) and mcpwarden
// working elsewhere, against security round 3's attacks on files:
//
//   - 3: /proc/self/cwd/<config>, /dev/fd/../cwd/<config> and
//     /proc/thread-self/cwd/<config> read mcpwarden's config through the
//     server's own cwd;
//   - a client config that routes the client through mcpwarden
//     (.mcp.json, .claude/settings.json, .cursor/mcp.json) rewritten;
//   - 4: a private key in an innocently named file read by its tail
//     ({"tail": 7}), which holds no BEGIN line;
//   - 5: a direnv .envrc with AWS_SECRET_ACCESS_KEY.
//
// Each must be refused, or (the key's tail, where the example allows the
// read) come back with no line of the key's body.
func TestExamplesRefuseRoundThreeAttacksLive(t *testing.T) {
	t.Parallel()
	for _, ex := range liveExamples {
		t.Run(ex.rel, func(t *testing.T) {
			t.Parallel()
			p := newExampleProject(t)
			body := newDeployKey(t, filepath.Join(p.dir, "deploy_key"))
			const awsSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
			writeFile(t, filepath.Join(p.dir, ".envrc"), "export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\nexport AWS_SECRET_ACCESS_KEY="+awsSecret+"\n")
			f := liveExample(t, ex.rel, ex.place, p)
			config, err := os.ReadFile(f.config)
			if err != nil {
				t.Fatal(err)
			}
			c := connectStdio(t, f)
			leaks := func(text string) string {
				switch {
				case strings.Contains(text, awsSecret):
					return "the AWS secret"
				case strings.Contains(text, string(config[:min(len(config), 40)])):
					return "mcpwarden's config"
				}
				for _, line := range body {
					if strings.Contains(text, line) {
						return "a line of the private key's body"
					}
				}
				return ""
			}
			refused := func(what, tool string, args map[string]any) {
				t.Helper()
				text, ok := tryTool(t, c, "fs__"+tool, args)
				if !ok {
					t.Errorf("%s: fs__%s %v was not refused: %q", what, tool, args, clip(text))
				}
				if l := leaks(text); l != "" {
					t.Errorf("%s: fs__%s %v leaked %s", what, tool, args, l)
				}
			}

			rel, err := filepath.Rel(p.dir, f.config)
			if err != nil {
				t.Fatal(err)
			}
			for _, path := range []string{"/proc/self/cwd/" + rel, "/dev/fd/../cwd/" + rel, "/proc/thread-self/cwd/" + rel} {
				refused("attack 3", "read_text_file", map[string]any{"path": path})
			}
			for _, cfg := range []string{".mcp.json", ".claude/settings.json", ".cursor/mcp.json"} {
				refused("a client config", "write_file", map[string]any{"path": cfg, "content": `{"mcpServers":{}}`})
				if _, err := os.Stat(filepath.Join(p.dir, cfg)); err == nil {
					t.Errorf("%s was written", cfg)
				}
			}
			refused("attack 5", "read_text_file", map[string]any{"path": ".envrc"})

			// Attack 4: where the example allows the read, what comes
			// back holds no line of the key.
			for _, args := range []map[string]any{{"path": "deploy_key", "tail": 7}, {"path": "deploy_key", "head": 5}, {"path": "deploy_key"}} {
				text, _ := tryTool(t, c, "fs__read_text_file", args)
				if l := leaks(text); l != "" {
					t.Errorf("attack 4: fs__read_text_file %v leaked %s: %q", args, l, clip(text))
				}
			}
			for _, d := range readAudit(t, f.auditPath, "decision") {
				if strings.HasPrefix(d.Tool, "mcp:fs:") && d.Arguments != nil {
					if path, _ := d.Arguments["path"].(string); strings.HasPrefix(path, "/proc/") || strings.HasPrefix(path, "/dev/") || strings.HasSuffix(path, ".json") {
						if d.Rule != "builtin:self-protection" {
							t.Errorf("%s %v was decided %s by %q, want builtin:self-protection", d.Tool, d.Arguments, d.Decision, d.Rule)
						}
					}
				}
			}
		})
	}
}
