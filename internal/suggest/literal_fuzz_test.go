package suggest

import (
	"path"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/mcpwarden/mcpwarden/rules"
)

// FuzzLiteralAllowsExactlyItsValue: a rule suggest writes with literal
// tool names, values and paths loads, allows the call it names, and does
// not allow another value, another path or another tool: escaping never
// turns a recorded value into a glob or splits the rule.
func FuzzLiteralAllowsExactlyItsValue(f *testing.F) {
	f.Add("read_file", "a:b=c", "src/[x]*.go", "a:b=d")
	f.Add("*", "{a,b}", "a/**/b", "a")
	f.Add("x:y", `\:q=1`, "..", `\`)
	f.Fuzz(func(t *testing.T, tool, value, p, other string) {
		if tool == "" || strings.IndexFunc(tool, unicode.IsSpace) >= 0 || !utf8.ValidString(tool) || !utf8.ValidString(value) || !utf8.ValidString(p) || !utf8.ValidString(other) || strings.ContainsRune(tool+value+p+other, 0) || strings.HasPrefix(tool, "-") {
			return
		}
		p = path.Clean("/" + p)
		if !norm.NFC.IsNormalString(p) {
			// A path is decided in each form the upstream may read it in,
			// its lexical form and its NFC form, and an allow holds only
			// if every form matches; path patterns are compiled in NFC.
			// So no literal allows a path that is not in NFC (U+037E, the
			// Greek question mark, is `;` in NFC): only a glob covering
			// both forms does. That is the rules' design, not escaping.
			return
		}
		rule := "mcp:fs:" + literalName(tool) + ":q=" + literal(value) + ":path=" + literal(p)
		pol, err := rules.Compile(rules.Spec{
			Global:  rules.PolicySpec{Default: "deny", Allow: []string{rule}},
			Servers: map[string]rules.ServerSpec{"fs": {}},
		})
		if err != nil {
			t.Fatalf("%s does not load: %v", rule, err)
		}
		call := func(tool, q, p string) rules.Verdict {
			return pol.Decide(rules.Call{Server: "fs", Tool: tool, Arguments: map[string]any{"q": q, "path": p}})
		}
		if v := call(tool, value, p); v.Decision != rules.Allow {
			t.Fatalf("%s does not allow its own call: %+v", rule, v)
		}
		if other != value {
			if v := call(tool, other, p); v.Decision == rules.Allow {
				t.Fatalf("%s allows q=%q", rule, other)
			}
		}
		if o := path.Clean("/" + other); o != p && !strings.EqualFold(o, p) {
			if v := call(tool, value, o); v.Decision == rules.Allow {
				t.Fatalf("%s allows path=%q", rule, o)
			}
		}
		if v := call(tool+"x", value, p); v.Decision == rules.Allow {
			t.Fatalf("%s allows tool %q", rule, tool+"x")
		}
	})
}
