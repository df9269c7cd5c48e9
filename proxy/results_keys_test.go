package proxy

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/proxy/scan"
	"github.com/mcpwarden/mcpwarden/rules"
	"github.com/mcpwarden/mcpwarden/upstream"
)

// readTextFile is the reference filesystem server's read_text_file as far
// as these tests need it: a real file's text, or its first head or last
// tail lines; with structured set, the text also as structuredContent (a
// JSON string with \n escapes).
func readTextFile(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	data, err := os.ReadFile(req.GetString("path", ""))
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	lines := strings.SplitAfter(string(data), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if n := req.GetInt("head", 0); n > 0 {
		lines = lines[:min(n, len(lines))]
	}
	if n := req.GetInt("tail", 0); n > 0 {
		lines = lines[max(0, len(lines)-n):]
	}
	text := strings.Join(lines, "")
	if req.GetBool("structured", false) {
		return mcp.NewToolResultStructured(map[string]any{"content": text}, text), nil
	}
	return mcp.NewToolResultText(text), nil
}

// keyFiles writes private keys and credential files into a new directory
// and returns it: deploy_key (a PKCS#1 RSA key made now), deploy_key_crlf
// (the same with CRLF line ends), and copies of the OpenSSH, PGP and
// PuTTY samples of internal/secrets.
func keyFiles(t *testing.T) (dir string, rsaKey string) {
	t.Helper()
	dir = t.TempDir()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	rsaKey = string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}))
	files := map[string]string{"deploy_key": rsaKey, "deploy_key_crlf": strings.ReplaceAll(rsaKey, "\n", "\r\n")}
	for name, sample := range map[string]string{"id_rsa": "openssh_rsa.key", "secring.asc": "pgp_private.asc", "key.ppk": "putty_rsa.ppk"} {
		data, err := os.ReadFile(filepath.Join("..", "internal", "secrets", "testdata", sample))
		if err != nil {
			t.Fatal(err)
		}
		files[name] = string(data)
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir, rsaKey
}

// bodyLines returns the lines of a key file that are key material: every
// line but the BEGIN, END and PuTTY header lines, and PuTTY's public lines.
func bodyLines(key string) []string {
	var out []string
	public := false
	for _, line := range strings.Split(strings.ReplaceAll(key, "\r", ""), "\n") {
		switch {
		case strings.HasPrefix(line, "Public-Lines:"):
			public = true
		case strings.HasPrefix(line, "Private-Lines:"):
			public = false
		case !public && len(line) >= 16 && !strings.ContainsAny(line, " :-"):
			out = append(out, line)
		}
	}
	return out
}

// TestPrivateKeyTailPassesNoLonger is attack 4 of issue 31: read_text_file
// {"path": "deploy_key", "tail": 7} returned the base64 body and the END
// line of a private key, since the scanner keyed on the BEGIN line. Its
// variants cut the key other ways, write it with CRLF, return it as a
// JSON string with \n escapes, and read keys in the OpenSSH, PGP and PuTTY
// formats.
func TestPrivateKeyTailPassesNoLonger(t *testing.T) {
	t.Parallel()
	dir, _ := keyFiles(t)
	fs := testkit.NewStandIn()
	fs.AddTool(mcp.NewTool("read_text_file", mcp.WithString("path"), mcp.WithNumber("head"), mcp.WithNumber("tail"), mcp.WithBoolean("structured")), readTextFile)
	pool := upstream.New(map[string]upstream.Spec{"fs": {Transport: upstream.TransportHTTP, URL: fs.URL(t)}}, nil)
	t.Cleanup(func() { pool.Close() })
	p, err := rules.Compile(rules.Spec{Global: rules.PolicySpec{Allow: []string{"mcp:fs:*"}}, Servers: map[string]rules.ServerSpec{"fs": {}}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Upstream: pool, Policy: p, Audit: audit.New(&memorySink{}, audit.Config{})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	pool.Start(t.Context(), srv.Peer())
	adopt(t, srv)
	c := testkit.Connect(t, srv.MCP(), "")
	tests := []struct {
		name string
		args map[string]any
	}{
		{"the last 7 lines of an RSA key", map[string]any{"path": "deploy_key", "tail": 7}},
		{"the last 7 lines of an RSA key with CRLF line ends", map[string]any{"path": "deploy_key_crlf", "tail": 7}},
		{"the last 2 lines of an RSA key", map[string]any{"path": "deploy_key", "tail": 2}},
		{"the first 5 lines of an RSA key", map[string]any{"path": "deploy_key", "head": 5}},
		{"the tail of an RSA key as structured content", map[string]any{"path": "deploy_key", "tail": 7, "structured": true}},
		{"the tail of an OpenSSH key", map[string]any{"path": "id_rsa", "tail": 7}},
		{"a PGP private key block", map[string]any{"path": "secring.asc"}},
		{"the tail of a PGP private key block", map[string]any{"path": "secring.asc", "tail": 4}},
		{"a PuTTY key", map[string]any{"path": "key.ppk"}},
		{"the private lines of a PuTTY key", map[string]any{"path": "key.ppk", "tail": 9}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.args["path"] = filepath.Join(dir, tt.args["path"].(string))
			res := testkit.CallTool(t, c, "fs__read_text_file", tt.args)
			raw, err := json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			key, err := os.ReadFile(tt.args["path"].(string))
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range bodyLines(string(key)) {
				if strings.Contains(string(raw), line) {
					t.Fatalf("the client got the key line %q in %s", line, raw)
				}
			}
			if !strings.Contains(string(raw), scan.Mask) {
				t.Errorf("result = %s, want the key redacted", raw)
			}
		})
	}
}

// TestKeyLinesSplitOverJSONStringsAreRedacted is the next variant of
// attack 4: a tool that returns a file's lines as an array of strings puts
// each body line of a key in a string of its own, with no line break.
// Each whole body line and the END line are found; the short last body
// line alone in its string is not (a fragment shorter than a body line is
// not claimed, see internal/secrets).
func TestKeyLinesSplitOverJSONStringsAreRedacted(t *testing.T) {
	t.Parallel()
	_, key := keyFiles(t)
	lines := strings.Split(strings.TrimSpace(key), "\n")
	tail := lines[len(lines)-7:]
	raw, err := json.Marshal(map[string]any{"structuredContent": map[string]any{"lines": tail}})
	if err != nil {
		t.Fatal(err)
	}
	got, findings := scan.JSON(raw, true)
	if !findings.Found() {
		t.Fatalf("scan.JSON found nothing in %s", raw)
	}
	for _, line := range append(bodyLines(key), lines[len(lines)-1]) {
		if (len(line) == 64 || strings.HasPrefix(line, "-----END")) && strings.Contains(string(got), line) {
			t.Errorf("the key line %q is in %s", line, got)
		}
	}
}
