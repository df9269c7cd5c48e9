package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const minimal = `
servers:
  fs:
    command: npx
    args: [-y, server-filesystem, .]
`

func TestParseAppliesTheDesignShape(t *testing.T) {
	t.Parallel()
	data := `
listen: 127.0.0.1:8765
auth: { bearer_token_env: MY_TOKEN }
servers:
  fs:
    command: npx
    args: [-y, "@modelcontextprotocol/server-filesystem", "."]
    env: { NODE_OPTIONS: "--max-old-space-size=256", TOKEN: "${FS_TOKEN}" }
    cwd: work
    init_timeout: 5s
    policy: { deny: ["mcp:fs:*:path=**/node_modules/**"] }
  github: { url: "https://api.githubcopilot.com/mcp/", headers: { Authorization: "Bearer ${GITHUB_TOKEN}" } }
  legacy: { url: "http://127.0.0.1:9000/sse", transport: sse }
policy:
  default: ask
  deny:  ["mcp:*:*:path=**/.env", "mcp:fs:write_file:path=/etc/**"]
  ask:   ["mcp:fs:write_file", "mcp:fs:edit_file"]
  allow: ["mcp:fs:read_*:path=/srv/app/**", "mcp:fs:list_directory"]
audit: { path: mcpwarden-audit.jsonl, required: true }
http: { session_idle_timeout: 10m, max_sessions: 500, max_sessions_per_principal: 20 }
`
	cfg, err := Parse([]byte(data), ".yaml", "/etc/mcpwarden", []string{"GITHUB_TOKEN=ghp_x", "FS_TOKEN=fs$1"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen != "127.0.0.1:8765" || cfg.Auth.BearerTokenEnv != "MY_TOKEN" {
		t.Errorf("listen/auth = %q/%q", cfg.Listen, cfg.Auth.BearerTokenEnv)
	}
	fs := cfg.Servers["fs"]
	if diff := cmp.Diff([]string{"-y", "@modelcontextprotocol/server-filesystem", "."}, fs.Args); diff != "" {
		t.Errorf("fs args (-want +got):\n%s", diff)
	}
	if fs.Env["TOKEN"] != "fs$1" || fs.Env["NODE_OPTIONS"] != "--max-old-space-size=256" {
		t.Errorf("fs env = %v, want ${FS_TOKEN} expanded and the rest as written", fs.Env)
	}
	if fs.InitTimeout != 5*time.Second {
		t.Errorf("init_timeout = %v", fs.InitTimeout)
	}
	if got := cfg.ServerDir("fs", "/home/u"); got != "/etc/mcpwarden/work" {
		t.Errorf("ServerDir(fs) = %q, want cwd joined to the config's directory", got)
	}
	if got := cfg.Servers["github"].Headers["Authorization"]; got != "Bearer ghp_x" {
		t.Errorf("github Authorization = %q", got)
	}
	if got := cfg.Servers["github"].EffectiveTransport(); got != TransportHTTP {
		t.Errorf("github transport = %q, want http", got)
	}
	if got := cfg.Servers["legacy"].EffectiveTransport(); got != TransportSSE {
		t.Errorf("legacy transport = %q, want sse", got)
	}
	if h := cfg.HTTP; h.SessionIdleTimeout != 10*time.Minute || h.MaxSessions != 500 || h.MaxSessionsPerPrincipal != 20 {
		t.Errorf("http session limits = %v, %d, %d", h.SessionIdleTimeout, h.MaxSessions, h.MaxSessionsPerPrincipal)
	}
	if len(cfg.Policy.Deny) != 2 || cfg.Policy.Default != "ask" || !cfg.Audit.Required {
		t.Errorf("policy/audit not read: %+v %+v", cfg.Policy, cfg.Audit)
	}
}

func TestParseRejectsBadInputNamingTheKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		data    string
		environ []string
		want    []string
	}{
		{"an unknown top-level key", minimal + "lisen: stdio\n", nil, []string{"config:6:1: lisen: unknown key; did you mean listen?"}},
		{"an unknown server key", "servers:\n  fs:\n    comand: npx\n", nil, []string{"config:3:5: servers.fs.comand: unknown key; did you mean servers.fs.command?"}},
		{"an unknown policy key", minimal + "policy: { alow: [x] }\n", nil, []string{"policy.alow: unknown key; did you mean policy.allow?"}},
		{"a value of the wrong type", minimal + "audit: { required: maybe }\n", nil, []string{"required"}},
		{"a bad server name", "servers:\n  My.Server:\n    command: x\n", nil, []string{"servers.My"}},
		{"a stdio server without a command", "servers:\n  fs: { args: [x] }\n", nil, []string{"servers.fs.command"}},
		{"a url that is not http", "servers:\n  gh: { url: ftp://x }\n", nil, []string{"servers.gh.url"}},
		{"an unknown transport", "servers:\n  gh: { url: http://x, transport: ws }\n", nil, []string{"servers.gh.transport"}},
		{"a missing variable in a header", "servers:\n  gh: { url: http://x, headers: { Authorization: \"Bearer ${NOPE}\" } }\n", nil, []string{"servers.gh.headers.Authorization", "NOPE"}},
		{"a public listen without auth", minimal + "listen: 0.0.0.0:8765\n", nil, []string{"listen", "auth.bearer_token_env"}},
		{"a bad rule", minimal + "policy: { deny: [\"fs:write_file\"] }\n", nil, []string{"policy.deny[0]"}},
		{"no servers", "listen: stdio\n", nil, []string{"servers"}},
		{"an unknown environment override", minimal, []string{"MCPWARDEN_LISTN=stdio"}, []string{`"listn"`}},
		{"a bad log level", minimal + "log: { level: loud }\n", nil, []string{"log.level"}},
		{"a negative session idle timeout", minimal + "http: { session_idle_timeout: -1s }\n", nil, []string{"http.session_idle_timeout"}},
		{"a negative session cap", minimal + "http: { max_sessions: -1 }\n", nil, []string{"http.max_sessions"}},
		{"a negative per-principal session cap", minimal + "http: { max_sessions_per_principal: -5 }\n", nil, []string{"http.max_sessions_per_principal"}},
		{"a negative in-flight bound", minimal + "max_inflight_mb: -1\n", nil, []string{"max_inflight_mb"}},
		{"per_principal isolation of a url server", "servers:\n  gh: { url: http://x, isolation: per_principal }\n", nil, []string{"servers.gh.isolation", "url server"}},
		{"per_session isolation of a url server", "servers:\n  gh: { url: http://x, isolation: per_session }\n", nil, []string{"servers.gh.isolation"}},
		{"an unknown isolation", "servers:\n  fs: { command: x, isolation: per_user }\n", nil, []string{"servers.fs.isolation", "per_principal"}},
		{"a negative isolation idle timeout", "servers:\n  fs: { command: x, isolation: per_principal, isolation_idle_timeout: -1s }\n", nil, []string{"servers.fs.isolation_idle_timeout"}},
		{"a negative isolation cap", "servers:\n  fs: { command: x, isolation: per_session, isolation_max: -1 }\n", nil, []string{"servers.fs.isolation_max"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tt.data), ".yaml", "/cfg", tt.environ)
			if err == nil {
				t.Fatal("Parse accepted bad input")
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

func TestEnvironmentOverridesTheFile(t *testing.T) {
	t.Parallel()
	environ := []string{
		"MCPWARDEN_LISTEN=127.0.0.1:9999",
		"MCPWARDEN_AUDIT__REQUIRED=true",
		"MCPWARDEN_POLICY__DEFAULT=deny",
		"MCPWARDEN_TOKEN=not-a-key", // the bearer token variable is not a key
		"OTHER=ignored",
	}
	cfg, err := Parse([]byte(minimal+"listen: stdio\n"), ".yaml", "/cfg", environ)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen != "127.0.0.1:9999" || !cfg.Audit.Required || cfg.Policy.Default != "deny" {
		t.Errorf("overrides not applied: listen %q required %v default %q", cfg.Listen, cfg.Audit.Required, cfg.Policy.Default)
	}
}

func TestLiteralDollarIsKept(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte("servers:\n  fs:\n    command: x\n    env: { PASS: \"a$b$$c\" }\n"), ".yaml", "/cfg", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Servers["fs"].Env["PASS"]; got != "a$b$$c" {
		t.Errorf("PASS = %q, want it unchanged", got)
	}
}

func TestJSONAndTOMLLoadAlike(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string]string{
		"c.json": `{"servers": {"fs": {"command": "npx", "args": ["-y", "x"]}}, "policy": {"allow": ["mcp:fs:*"]}}`,
		"c.toml": "[servers.fs]\ncommand = \"npx\"\nargs = [\"-y\", \"x\"]\n[policy]\nallow = [\"mcp:fs:*\"]\n",
	}
	for name, data := range files {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := Load(path, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if cfg.Servers["fs"].Command != "npx" || len(cfg.Policy.Allow) != 1 || cfg.Dir != dir {
			t.Errorf("%s loaded as %+v", name, cfg)
		}
	}
}

func TestExamplesLoad(t *testing.T) {
	t.Parallel()
	paths, err := filepath.Glob("../../examples/*.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no examples found: %v", err)
	}
	for _, path := range paths {
		if strings.HasSuffix(path, ".cases.yaml") { // test's cases, not a config
			continue
		}
		if _, err := Load(path, nil); err != nil {
			t.Errorf("example %s: %v", path, err)
		}
	}
}

func TestRelativeWorkspaceIsRelativeToTheConfigFile(t *testing.T) {
	t.Parallel()
	data := `servers:
  fs:
    command: x
    policy: { workspace: [., /abs] }
policy:
  workspace: [.., sub/dir]
  outside_workspace: deny
`
	cfg, err := Parse([]byte(data), ".yaml", "/srv/project/.cfg", nil)
	if err != nil {
		t.Fatal(err)
	}
	spec := cfg.RulesSpecIn("/elsewhere")
	if got, want := spec.Global.Workspace, []string{"/srv/project", "/srv/project/.cfg/sub/dir"}; !slices.Equal(got, want) {
		t.Errorf("global workspace = %q, want %q", got, want)
	}
	if got, want := spec.Servers["fs"].Policy.Workspace, []string{"/srv/project/.cfg", "/abs"}; !slices.Equal(got, want) {
		t.Errorf("server workspace = %q, want %q", got, want)
	}
	if cfg.Policy.Workspace[0] != ".." {
		t.Errorf("RulesSpecIn changed the config's own workspace: %q", cfg.Policy.Workspace)
	}
}

func TestAuditSigningKeyVariableIsNoConfigKey(t *testing.T) {
	t.Parallel()
	environ := []string{AuditKeyEnv + "=PRIVATE+KEY+mcpwarden-audit+00000000+AQ"}
	cfg, err := Parse([]byte(minimal), ".yaml", "/cfg", environ)
	if err != nil {
		t.Fatalf("Parse = %v; want the key's variable left to the audit log", err)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("warnings %v; want none for the key's variable", cfg.Warnings)
	}
}
