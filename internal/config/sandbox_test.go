package config

import (
	"fmt"
	"strings"
	"testing"
	"unicode"

	"github.com/mcpwarden/mcpwarden/internal/sandbox"
)

func TestConfigWithoutSandboxKeyIsSandboxed(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte("servers:\n  fs: { command: x }\n"), ".yaml", "/cfg", nil)
	if err != nil {
		t.Fatal(err)
	}
	sb, on := cfg.EffectiveSandbox("fs")
	if !on {
		t.Fatal("a server with no sandbox key is not sandboxed")
	}
	p := sb.Policy()
	if p.Tier != sandbox.TierAuto || p.Network != sandbox.NetworkProxy || p.BestEffort {
		t.Errorf("policy = tier %s, network %s, best effort %v; want auto, proxy, false", p.Tier, p.Network, p.BestEffort)
	}
	if len(cfg.SandboxWarnings()) != 0 {
		t.Errorf("warnings = %q, want none", cfg.SandboxWarnings())
	}
}

func TestSandboxKeysLoad(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		yaml    string
		on      bool
		check   func(Sandbox) bool
		warning bool
	}{
		{"sandbox off for one server turns it off with a warning", "servers:\n  fs: { command: x, sandbox: off }\n", false, nil, true},
		{"sandbox false for one server turns it off", "servers:\n  fs: { command: x, sandbox: false }\n", false, nil, true},
		{"top-level off turns every server off", "sandbox: off\nservers:\n  fs: { command: x }\n", false, nil, true},
		{"a server's own block turns it back on under a top-level off", "sandbox: off\nservers:\n  fs: { command: x, sandbox: on }\n", true, nil, false},
		{"a server's keys override the top-level ones", "sandbox: { tier: landlock, network: host }\nservers:\n  fs: { command: x, sandbox: { network: none } }\n", true,
			func(s Sandbox) bool { return s.Tier == "landlock" && s.Network == "none" }, false},
		{"network proxy is read and does not warn", "servers:\n  fs: { command: x, sandbox: { network: proxy } }\n", true,
			func(s Sandbox) bool { return s.Policy().Network == sandbox.NetworkProxy }, false},
		{"network none is still none", "servers:\n  fs: { command: x, sandbox: { network: none } }\n", true,
			func(s Sandbox) bool { return s.Policy().Network == sandbox.NetworkNone }, false},
		{"network host warns", "servers:\n  fs: { command: x, sandbox: { network: host } }\n", true, nil, true},
		{"relative paths are joined to the config's directory", "servers:\n  fs: { command: x, sandbox: { read: [data], write: [out] } }\n", true,
			func(s Sandbox) bool { return s.Read[0] == "/cfg/data" && s.Write[0] == "/cfg/out" }, false},
		{"sizes take units", "servers:\n  fs: { command: x, sandbox: { limits: { memory: 512MiB, file_size: 1G, processes: 64 } } }\n", true,
			func(s Sandbox) bool {
				return s.Limits.Memory == 512<<20 && s.Limits.FileSize == 1<<30 && s.Limits.Processes == 64
			}, false},
		{"require false is best effort", "servers:\n  fs: { command: x, sandbox: { require: false } }\n", true,
			func(s Sandbox) bool { return s.Policy().BestEffort }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse([]byte(tt.yaml), ".yaml", "/cfg", nil)
			if err != nil {
				t.Fatal(err)
			}
			sb, on := cfg.EffectiveSandbox("fs")
			if on != tt.on {
				t.Fatalf("sandboxed = %v, want %v", on, tt.on)
			}
			if tt.check != nil && !tt.check(sb) {
				t.Errorf("sandbox = %+v", sb)
			}
			if got := len(cfg.SandboxWarnings()) > 0; got != tt.warning {
				t.Errorf("warnings = %q, want some: %v", cfg.SandboxWarnings(), tt.warning)
			}
		})
	}
}

func TestBadSandboxValuesAreLoadErrorsNamingTheKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		yaml string
		want string
	}{
		{"an unknown network is refused", "servers:\n  fs: { command: x, sandbox: { network: wide } }\n", "servers.fs.sandbox.network"},
		{"an unknown tier is refused", "servers:\n  fs: { command: x, sandbox: { tier: docker } }\n", "servers.fs.sandbox.tier"},
		{"an unknown word for the sandbox is refused", "servers:\n  fs: { command: x, sandbox: maybe }\n", "write off, on, or a map"},
		{"a bad size is refused", "servers:\n  fs: { command: x, sandbox: { limits: { memory: lots } } }\n", "512MiB"},
		{"passing mcpwarden's own variables is refused", "servers:\n  fs: { command: x, sandbox: { env_passthrough: [MCPWARDEN_TOKEN_KEY] } }\n", "servers.fs.sandbox.env_passthrough"},
		{"writing the config's directory is refused", "servers:\n  fs: { command: x, sandbox: { write: [.] } }\n", "mcpwarden's own file"},
		{"reading the whole disk is refused", "servers:\n  fs: { command: x, sandbox: { read: [/] } }\n", "mcpwarden's own file"},
		{"a sandbox on a remote server is refused", "servers:\n  r: { url: http://127.0.0.1:1/mcp, sandbox: { tier: landlock } }\n", "servers.r.sandbox"},
		{"an unknown feature to disable is refused", "servers:\n  fs: { command: x, sandbox: { disable: [apparmor] } }\n", "servers.fs.sandbox.disable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tt.yaml), ".yaml", "/cfg", nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// FuzzSandboxConfigLoadsOrNamesItsKey loads a server's sandbox block built
// from fuzzed values: it must never panic, a size must never wrap, and a
// config that loads must have every server sandboxed unless it says off.
func FuzzSandboxConfigLoadsOrNamesItsKey(f *testing.F) {
	f.Add("auto", "none", "512MiB", "data", "GITHUB_TOKEN")
	f.Add("landlock", "host", "18446744073709551615", "/", "MCPWARDEN_X")
	f.Add("x", "proxy", "16EiB", "../..", "A=B")
	f.Fuzz(func(t *testing.T, tier, network, size, path, env string) {
		var b ByteSize
		// A zero may be written with white space (UnmarshalText trims it,
		// as unicode.IsSpace says) and a unit.
		noSpace := strings.Map(func(r rune) rune {
			if unicode.IsSpace(r) {
				return -1
			}
			return r
		}, size)
		if err := b.UnmarshalText([]byte(size)); err == nil && b == 0 && strings.Trim(noSpace, "0KMGTiB") != "" {
			t.Fatalf("size %q read as 0", size)
		}
		yaml := fmt.Sprintf("servers:\n  fs:\n    command: x\n    sandbox:\n      tier: %q\n      network: %q\n      limits: { memory: %q }\n      read: [%q]\n      env_passthrough: [%q]\n", tier, network, size, path, env)
		cfg, err := Parse([]byte(yaml), ".yaml", "/cfg", nil)
		if err != nil {
			return
		}
		if _, on := cfg.EffectiveSandbox("fs"); !on {
			t.Fatalf("a server whose sandbox block is not off is unconfined:\n%s", yaml)
		}
	})
}
