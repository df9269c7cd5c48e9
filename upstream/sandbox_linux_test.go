package upstream

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/sandbox"
)

// benchSandbox is the sandbox the benchmarks start servers in: the
// default policy, with this test binary as the launcher.
func benchSandbox(b *testing.B) *Sandbox {
	return &Sandbox{Launcher: os.Args[0], Policy: sandbox.Policy{Home: filepath.Join(b.TempDir(), "home"), TmpDir: filepath.Join(b.TempDir(), "tmp")}}
}

// BenchmarkPoolStartup starts a pool of one stdio server until it has
// initialized and listed its tools, then closes it: unsandboxed and
// sandboxed one after the other in each iteration, so that the ratio is
// of the same run. The servers are the Go stand-in (this test binary)
// and, when .ci/setup has installed it, server-everything under node.
func BenchmarkPoolStartup(b *testing.B) {
	everything, _ := filepath.Abs(filepath.Join("..", ".tools", "npm", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"))
	type server struct {
		name string
		spec Spec
		tier sandbox.Tier
	}
	goSpec := Spec{Transport: TransportStdio, Command: os.Args[0], Env: map[string]string{stdioServerEnv: filepath.Join(b.TempDir(), "pid")}}
	// Tier landlock starts a supervisor besides the server.
	servers := []server{{"go", goSpec, sandbox.TierAuto}, {"go-landlock", goSpec, sandbox.TierLandlock}}
	if _, err := os.Stat(everything); err == nil {
		servers = append(servers, server{"everything", Spec{Transport: TransportStdio, Command: "node", Args: []string{everything, "stdio"}}, sandbox.TierAuto})
	}
	for _, srv := range servers {
		b.Run(srv.name, func(b *testing.B) {
			sandboxed := srv.spec
			sandboxed.Sandbox = benchSandbox(b)
			sandboxed.Sandbox.Policy.Tier = srv.tier
			var plain, boxed time.Duration
			for b.Loop() {
				plain += timePoolStart(b, srv.spec)
				boxed += timePoolStart(b, sandboxed)
			}
			n := float64(b.N)
			b.ReportMetric(float64(plain.Microseconds())/n, "µs-unsandboxed")
			b.ReportMetric(float64(boxed.Microseconds())/n, "µs-sandboxed")
			b.ReportMetric(float64(boxed)/float64(plain), "ratio")
		})
	}
}

// timePoolStart is how long a pool of spec alone takes to be up.
func timePoolStart(b *testing.B, spec Spec) time.Duration {
	begin := time.Now()
	pool := Start(b.Context(), map[string]Spec{"s": spec}, nil)
	if err := pool.Err("s"); err != nil {
		b.Fatal(err)
	}
	d := time.Since(begin)
	pool.Close()
	return d
}

// BenchmarkPoolCallStdioSandboxed is BenchmarkPoolCallStdio with the
// server sandboxed: the sandbox is not in the MCP path (the server's
// pipes are the same pipes), so the two should not differ.
func BenchmarkPoolCallStdioSandboxed(b *testing.B) {
	benchPoolCallStdio(b, Spec{Transport: TransportStdio, Command: os.Args[0], Env: map[string]string{stdioServerEnv: filepath.Join(b.TempDir(), "pid")}, Sandbox: benchSandbox(b)})
}

func TestSandboxedServerReportsItsConfinementInItsEvent(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []Event
	spec := Spec{Transport: TransportStdio, Command: os.Args[0], Env: map[string]string{stdioServerEnv: filepath.Join(t.TempDir(), "pid")},
		Sandbox: &Sandbox{Launcher: os.Args[0], Policy: sandbox.Policy{Home: filepath.Join(t.TempDir(), "home")}}}
	pool := Start(t.Context(), map[string]Spec{"s": spec}, &Options{OnEvent: func(e Event) { mu.Lock(); got = append(got, e); mu.Unlock() }})
	defer pool.Close()
	if err := pool.Err("s"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) == 0 || got[0].Kind != EventConnected || got[0].Sandbox == nil || !got[0].Sandbox.Has(sandbox.ConfineLandlockFS) || got[0].SandboxOff {
		t.Fatalf("events = %+v, want connected with a sandbox report that has landlock_fs", got)
	}
	if info, err := os.Stat(filepath.Join(spec.Sandbox.Policy.Home)); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("the private HOME is %v (%v), want a 0700 directory", info, err)
	}
}

func TestSandboxRequireRefusesToStartServerWithoutLandlock(t *testing.T) {
	t.Parallel()
	spec := Spec{Transport: TransportStdio, Command: os.Args[0], Env: map[string]string{stdioServerEnv: filepath.Join(t.TempDir(), "pid")},
		Sandbox: &Sandbox{Launcher: os.Args[0], Policy: sandbox.Policy{Tier: sandbox.TierLandlock, Disable: []sandbox.Feature{sandbox.FeatureLandlock}}}}
	pool := Start(t.Context(), map[string]Spec{"s": spec}, &Options{MinBackoff: time.Minute, MaxBackoff: time.Minute})
	defer pool.Close()
	err := pool.Err("s")
	if err == nil || !strings.Contains(err.Error(), "sandbox incomplete") || !strings.Contains(err.Error(), "landlock_fs") {
		t.Fatalf("err = %v, want the server refused for want of landlock_fs", err)
	}
}

// ownInWorkspace is a sandboxed spec whose workspace holds mcpwarden's
// config, as in the quickstart, in tier.
func ownInWorkspace(t *testing.T, tier sandbox.Tier) (Spec, string) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "proj")
	cfg := filepath.Join(ws, "mcpwarden.yaml")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte("servers: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return Spec{Transport: TransportStdio, Command: os.Args[0], Env: map[string]string{stdioServerEnv: filepath.Join(dir, "pid")},
		Sandbox: &Sandbox{Launcher: os.Args[0], Protected: []string{cfg},
			Policy: sandbox.Policy{Tier: tier, Home: filepath.Join(dir, "home"), Write: []string{ws}}}}, cfg
}

func TestSandboxMasksConfigKeptInWorkspaceInTierNamespaces(t *testing.T) {
	t.Parallel()
	if why, ok := sandbox.Probe(sandbox.Policy{}).Missing[sandbox.FeatureUserNamespaces]; ok {
		t.Skip("tier namespaces needs user namespaces: " + why)
	}
	spec, cfg := ownInWorkspace(t, sandbox.TierNamespaces)
	var mu sync.Mutex
	var got []Event
	pool := Start(t.Context(), map[string]Spec{"s": spec}, &Options{OnEvent: func(e Event) { mu.Lock(); got = append(got, e); mu.Unlock() }})
	defer pool.Close()
	if err := pool.Err("s"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) == 0 || got[0].Sandbox == nil || !got[0].Sandbox.Has(sandbox.ConfineMaskOwnFiles) || !slices.Equal(got[0].Sandbox.Masked, []string{cfg}) {
		t.Fatalf("events = %+v, want a report that masked %s", got, cfg)
	}
}

func TestSandboxRequireRefusesConfigKeptInWorkspaceInTierLandlock(t *testing.T) {
	t.Parallel()
	spec, cfg := ownInWorkspace(t, sandbox.TierLandlock)
	pool := Start(t.Context(), map[string]Spec{"s": spec}, &Options{MinBackoff: time.Minute, MaxBackoff: time.Minute})
	defer pool.Close()
	err := pool.Err("s")
	if err == nil || !strings.Contains(err.Error(), cfg) || !strings.Contains(err.Error(), "require: false") {
		t.Fatalf("err = %v, want the server refused, naming %s and what to do", err, cfg)
	}
}

func TestSandboxBindsClientConfigInWorkspaceReadOnlyInTierNamespaces(t *testing.T) {
	t.Parallel()
	if why, ok := sandbox.Probe(sandbox.Policy{}).Missing[sandbox.FeatureUserNamespaces]; ok {
		t.Skip("tier namespaces needs user namespaces: " + why)
	}
	spec, _ := ownInWorkspace(t, sandbox.TierNamespaces)
	ws := spec.Sandbox.Policy.Write[0]
	client := filepath.Join(ws, ".mcp.json")
	if err := os.WriteFile(client, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	spec.Sandbox.ProtectedNames = []string{".mcp.json", ".cursor/mcp.json"}
	var mu sync.Mutex
	var got []Event
	pool := Start(t.Context(), map[string]Spec{"s": spec}, &Options{OnEvent: func(e Event) { mu.Lock(); got = append(got, e); mu.Unlock() }})
	defer pool.Close()
	if err := pool.Err("s"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) == 0 || got[0].Sandbox == nil || !got[0].Sandbox.Has(sandbox.ConfineReadOnlyOwnFiles) || !slices.Equal(got[0].Sandbox.ReadOnly, []string{client}) {
		t.Fatalf("events = %+v, want a report that bound %s read-only", got, client)
	}
}
