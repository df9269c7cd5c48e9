package clientconfig

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/knadh/koanf/parsers/toml/v2"
)

func TestCodexRewriteRefusesServersItCannotReplace(t *testing.T) {
	t.Parallel()
	e := Entry{Command: "mcpwarden", Args: []string{"serve", "--config", "/etc/mcpwarden.yaml"}}
	tests := []struct {
		name string
		data string
	}{
		{"an inline table of servers", "mcp_servers = { fs = { command = \"npx\" } }\n"},
		{"dotted keys at the top", "mcp_servers.fs.command = \"npx\"\n"},
		{"dotted keys in another table", "[mcp_servers_extra]\nx = 1\n[mcp]\nservers = 1\n[root]\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, err := Rewrite(Codex, []byte(tt.data), e)
			if tt.name == "dotted keys in another table" {
				// Not servers at all: kept as written, the entry appended.
				if err != nil || !strings.HasPrefix(string(out), tt.data) {
					t.Fatalf("Rewrite = %q, %v; want the file kept and the entry appended", out, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "by hand") {
				t.Fatalf("Rewrite = %q, %v; want an error that says to replace them by hand", out, err)
			}
		})
	}
}

func TestCodexRewriteKeepsCommentsAndOtherTables(t *testing.T) {
	t.Parallel()
	data := "# mine\nmodel = \"m\"\n\n[mcp_servers.fs] # the files\ncommand = \"npx\"\n[mcp_servers.fs.env]\nA = \"1\"\n\n[ \"mcp_servers\" . gh ]\nurl = \"https://x\"\n\n[profiles.p]\n# kept\nmodel = \"n\"\n"
	e := Entry{Command: "mcpwarden", Args: []string{"serve"}, Env: map[string]string{"TOKEN": "t\"1"}}
	out, err := Rewrite(Codex, []byte(data), e)
	if err != nil {
		t.Fatal(err)
	}
	want := "# mine\nmodel = \"m\"\n\n[profiles.p]\n# kept\nmodel = \"n\"\n\n" + string(codexEntry(e))
	if diff := cmp.Diff(want, string(out)); diff != "" {
		t.Errorf("Rewrite (-want +got):\n%s", diff)
	}
	src, err := Parse(Codex, out)
	if err != nil || len(src.Servers) != 1 || src.Servers[0].Env["TOKEN"] != "t\"1" {
		t.Errorf("Parse(rewritten) = %+v, %v", src, err)
	}
}

func TestGeminiEntryIsTrustedWhenTheClientPromptIsSkipped(t *testing.T) {
	t.Parallel()
	out, err := Snippet(Gemini, Entry{Command: "mcpwarden", Args: []string{"serve"}, Trusted: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"trust": true`) {
		t.Errorf("snippet lacks trust: true:\n%s", out)
	}
	out, _ = Snippet(Gemini, Entry{Command: "mcpwarden", Args: []string{"serve"}})
	if strings.Contains(string(out), "trust") {
		t.Errorf("an untrusted entry says trust:\n%s", out)
	}
}

func TestGeminiBareVariablesBecomeReferences(t *testing.T) {
	t.Parallel()
	src, err := Parse(Gemini, []byte(`{"mcpServers": {"gh": {"command": "npx", "args": ["--match", "^a$b"], "env": {"TOKEN": "$GH_TOKEN", "B": "x-$B-y"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Convert(src, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`TOKEN: "${GH_TOKEN}"`, `B: "x-${B}-y"`, `"^a$b"`} {
		if !strings.Contains(string(res.Config), want) {
			t.Errorf("config lacks %s:\n%s", want, res.Config)
		}
	}
}

// FuzzCodexRewrite: whatever config.toml Codex has, a rewrite either is
// refused or holds the mcpwarden entry as its only server and every other
// top-level key of the file, with the same value.
func FuzzCodexRewrite(f *testing.F) {
	for _, seed := range []string{
		"model = \"m\"\n[mcp_servers.fs]\ncommand = \"npx\"\n[profiles.p]\nmodel = \"n\"\n",
		"[mcp_servers.a.env]\nX = \"1\"\n[[tools]]\nname = \"t\"\n",
		"mcp_servers = { fs = { command = \"npx\" } }\n",
		"x = \"\"\"\n[mcp_servers.fs]\n\"\"\"\n",
		"[ 'mcp_servers' . fs ] # c\nurl = \"https://x\"\n",
	} {
		f.Add([]byte(seed))
	}
	e := Entry{Command: "mcpwarden", Args: []string{"serve", "--config", "/c.yaml"}, Env: map[string]string{"K": "v"}, PassEnv: []string{"TOKEN"}}
	f.Fuzz(func(t *testing.T, data []byte) {
		before, err := toml.Parser().Unmarshal(data)
		if err != nil {
			return
		}
		out, err := Rewrite(Codex, data, e)
		if err != nil {
			return
		}
		after, err := toml.Parser().Unmarshal(out)
		if err != nil {
			t.Fatalf("the rewrite does not parse: %v\n%s", err, out)
		}
		src, err := Parse(Codex, out)
		if err != nil || len(src.Servers) != 1 || src.Servers[0].Name != DefaultEntryName || src.Servers[0].Command != e.Command {
			t.Fatalf("the rewrite's servers = %+v, %v; want the entry alone\n%s", src, err, out)
		}
		for k, v := range before {
			if k == codexKey {
				continue
			}
			if diff := cmp.Diff(v, after[k]); diff != "" {
				t.Fatalf("top-level key %q changed (-before +after):\n%s\n%s", k, diff, out)
			}
		}
	})
}
