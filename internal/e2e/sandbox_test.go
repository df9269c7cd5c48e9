package e2e

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// The e2e tests run mcpwarden as the test's user (root in CI): the
// harness builds its binaries in a private temporary directory and gives
// every fixture one, so dropping to another user here would mean
// re-owning all of them. The sandbox package's own escape tests run each
// attempt as an unprivileged user; these show the wiring.

// evilServer is the sandbox package's deliberately malicious server,
// built once per run next to the mcpwarden binary.
var evilServer struct {
	once sync.Once
	path string
	err  error
}

func evilBinary(t *testing.T) string {
	t.Helper()
	evilServer.once.Do(func() {
		path := filepath.Join(filepath.Dir(binary), "evil")
		build := exec.Command("go", "build", "-o", path, "./internal/sandbox/internal/evil")
		build.Dir = repoRoot
		if out, err := build.CombinedOutput(); err != nil {
			evilServer.err = fmt.Errorf("building the malicious server: %w\n%s", err, out)
			return
		}
		evilServer.path = path
	})
	if evilServer.err != nil {
		t.Fatal(evilServer.err)
	}
	return evilServer.path
}

// upstreamSandbox waits for the upstream audit events of server and
// returns the sandbox field of the first that has one.
func upstreamSandbox(t *testing.T, f *fixture, server string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, e := range readAudit(t, f.auditPath, "upstream") {
			if e.Server == server && e.Sandbox != "" {
				return e.Sandbox
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no upstream audit event of %s has a sandbox field", server)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sandboxedTier is true of a sandbox field that names a tier.
func sandboxedTier(field string) bool {
	return strings.HasPrefix(field, "tier namespaces,") || strings.HasPrefix(field, "tier landlock,")
}

func TestSandboxedServerCannotReadMcpwardensConfig(t *testing.T) {
	t.Parallel()
	evil := evilBinary(t)
	// evil_off runs the same attempts unconfined: the control that shows
	// each attempt is real (the sandbox is off only for it).
	f := newFixture(t, "stdio", fmt.Sprintf("  evil:\n    command: %q\n  evil_off:\n    command: %q\n    sandbox: off", evil, evil),
		`  allow: ["mcp:evil:*", "mcp:evil_off:*"]`)
	c := connectStdio(t, f)
	tests := []struct {
		name string
		path string
		want string
	}{
		{"the config", f.config, "listen:"},
		{"the audit log", f.auditPath, `"event"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, _ := tryTool(t, c, "evil_off__read_file", map[string]any{"a": tt.path})
			if !strings.HasPrefix(text, "ESCAPED") || !strings.Contains(text, tt.want) {
				t.Fatalf("unconfined, reading %s = %q; want it read (else the attempt proves nothing)", tt.name, clip(text))
			}
			text, _ = tryTool(t, c, "evil__read_file", map[string]any{"a": tt.path})
			if !strings.HasPrefix(text, "BLOCKED") {
				t.Errorf("sandboxed, reading %s = %q; want BLOCKED", tt.name, clip(text))
			}
		})
	}
	// Nor does it find mcpwarden's variables in its environment.
	if text, _ := tryTool(t, c, "evil__find_env", map[string]any{"a": "MCPWARDEN_"}); strings.HasPrefix(text, "ESCAPED") {
		t.Errorf("sandboxed, find_env MCPWARDEN_ = %q; want BLOCKED", clip(text))
	}
	if field := upstreamSandbox(t, f, "evil"); !sandboxedTier(field) {
		t.Errorf("evil's upstream audit event says sandbox %q, want its tier", field)
	}
	if field := upstreamSandbox(t, f, "evil_off"); field != "off" {
		t.Errorf("evil_off's upstream audit event says sandbox %q, want off", field)
	}
}

func TestSandboxRequireRefusesToStartUnconfinableServer(t *testing.T) {
	t.Parallel()
	evil := evilBinary(t)
	// disable makes the launcher treat Landlock as missing from the kernel.
	f := newFixture(t, "stdio", fmt.Sprintf("  evil:\n    command: %q\n    sandbox: { tier: landlock, disable: [landlock] }\n    init_timeout: 10s\n  weak:\n    command: %q\n    sandbox: { tier: landlock, disable: [landlock], require: false }", evil, evil),
		`  allow: ["mcp:evil:*", "mcp:weak:*"]`)
	f.setStartupWait(t, "3s")
	stderr := &testkit.LockedBuffer{}
	c := connectStdioWithStderr(t, f, stderr)
	text, refused := tryTool(t, c, "evil__read_file", map[string]any{"a": f.config})
	if !refused || strings.Contains(text, "ESCAPED") {
		t.Errorf("a server that cannot be confined answered: %q", clip(text))
	}
	// The refusal can reach the client before the pipe has carried the
	// log line that says why to the buffer.
	testkit.Eventually(t, 10*time.Second, "mcpwarden's log to say the sandbox is incomplete for want of landlock_fs", func() bool {
		log := stderr.String()
		return strings.Contains(log, "sandbox incomplete") && strings.Contains(log, "landlock_fs")
	})
	// The next variant: require: false starts it, and says what is missing.
	if field := upstreamSandbox(t, f, "weak"); !strings.Contains(field, "missing landlock_fs") {
		t.Errorf("weak's upstream audit event says sandbox %q, want it to name landlock_fs missing", field)
	}
}

func TestIsolatedChildrenAreSandboxed(t *testing.T) {
	t.Parallel()
	evil := evilBinary(t)
	f := newFixture(t, "stdio", fmt.Sprintf("  evil:\n    command: %q\n    isolation: per_session", evil),
		`  allow: ["mcp:evil:*"]`)
	c := connectStdio(t, f)
	text, _ := tryTool(t, c, "evil__read_file", map[string]any{"a": f.config})
	if !strings.HasPrefix(text, "BLOCKED") {
		t.Errorf("an isolated child read mcpwarden's config: %q", clip(text))
	}
}

func TestConfigWithoutSandboxKeyIsSandboxed(t *testing.T) {
	t.Parallel()
	f := standardFixture(t, "stdio")
	c := connectStdio(t, f)
	callTool(t, c, "everything__echo", map[string]any{"message": "hi"})
	for _, server := range []string{"everything", "fs"} {
		if field := upstreamSandbox(t, f, server); !sandboxedTier(field) {
			t.Errorf("%s's upstream audit event says sandbox %q, want its tier", server, field)
		}
	}
}

func TestQuickstartRunsSandboxed(t *testing.T) {
	t.Parallel()
	f := liveExample(t, "quickstart.yaml", "examples/quickstart.yaml", newExampleProject(t))
	c := connectStdio(t, f)
	if text, refused := tryTool(t, c, "fs__list_allowed_directories", nil); refused {
		t.Fatalf("list_allowed_directories = %q", clip(text))
	}
	if field := upstreamSandbox(t, f, "fs"); !sandboxedTier(field) {
		t.Errorf("the quickstart's upstream audit event says sandbox %q, want its tier", field)
	}
}
