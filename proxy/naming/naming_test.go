// Package naming is the vocabulary of tool names: a tool's canonical name
// (mcp:<server>:<tool>, used in rules, audit and the CLI), its wire name (what
// clients see and call), the Scheme that gives wire names and the Names map
// that turns them back into tools. It is pure: no I/O, no MCP session.
package naming

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpwarden/mcpwarden/rules"
)

func TestWireName(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 80)
	tests := []struct {
		name                     string
		server, tool, sep, alias string
		want                     string
	}{
		{"server and tool are joined by the separator", "fs", "read_text_file", "", "", "fs__read_text_file"},
		{"a custom separator is used", "fs", "read", "-", "", "fs-read"},
		{"characters outside the safe set become underscores", "web", "fetch.url:v2", "", "", "web__fetch_url_v2"},
		{"an alias wins", "fs", "read_text_file", "", "read", "read"},
		{"non-ASCII letters become underscores", "fs", "lire_é", "", "", "fs__lire__"},
		{"a long name is cut with a stable hash", "srv", long, "", "", "srv__" + long[:64-5-9] + "_" + hash8("mcp:srv:"+long)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n := Scheme{Separator: tt.sep}
			if tt.alias != "" {
				n.Aliases = map[string]map[string]string{tt.server: {tt.tool: tt.alias}}
			}
			got := n.Wire(tt.server, tt.tool)
			if got != tt.want {
				t.Errorf("WireName(%q, %q) = %q, want %q", tt.server, tt.tool, got, tt.want)
			}
			if len(got) > 64 || !regexp.MustCompile(rules.WireNameGrammar).MatchString(got) {
				t.Errorf("WireName(%q, %q) = %q is not client-safe", tt.server, tt.tool, got)
			}
		})
	}
}

func hash8(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:4])
}

func TestLongNamesDifferingAtTheEndDoNotCollide(t *testing.T) {
	t.Parallel()
	a := WireName("srv", strings.Repeat("y", 70)+"a", "")
	b := WireName("srv", strings.Repeat("y", 70)+"b", "")
	if a == b {
		t.Fatalf("two long tool names share wire name %q", a)
	}
}

func TestNewNamesRejectsCollisions(t *testing.T) {
	t.Parallel()
	tools := []Tool{
		{Server: "a", Name: "x.y", Canonical: "mcp:a:x.y", Wire: WireName("a", "x.y", "")},
		{Server: "a", Name: "x_y", Canonical: "mcp:a:x_y", Wire: WireName("a", "x_y", "")},
	}
	_, err := NewNames(tools)
	if err == nil {
		t.Fatal("NewNames accepted two tools with one wire name")
	}
	for _, want := range []string{"mcp:a:x.y", "mcp:a:x_y", "a__x_y"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

func TestNewNamesRejectsUnsafeAlias(t *testing.T) {
	t.Parallel()
	_, err := NewNames([]Tool{{Server: "a", Name: "t", Canonical: "mcp:a:t", Wire: "a:t"}})
	if err == nil {
		t.Fatal("NewNames accepted a wire name with a colon")
	}
}
