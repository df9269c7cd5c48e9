// Package deps holds the test that pins the arrows between mcpwarden's
// packages, as go/build's deps_test.go does for the standard library: the
// design's "must not" rules (docs/design.md, "The parts") checked against
// the imports of every non-test file, so that a wrong arrow fails the
// build's tests the day it is written instead of at the next review.
package deps

import (
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// module is the import path of mcpwarden's module; packages are named
// below by their path inside it.
const module = "github.com/mcpwarden/mcpwarden"

// A graph holds the module packages each package imports in its non-test
// files, whatever their build tags, by path inside the module.
type graph map[string][]string

// loadGraph reads the imports of every package of the module, whose root
// is two directories up.
func loadGraph(t *testing.T) graph {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("the module root %s has no go.mod: %v", root, err)
	}
	g := graph{}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(rel)
		for _, imp := range f.Imports {
			ip, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return err
			}
			if dep, ok := strings.CutPrefix(ip, module+"/"); ok && !slices.Contains(g[pkg], dep) {
				g[pkg] = append(g[pkg], dep)
			} else if !ok && strings.HasPrefix(ip, "github.com/mark3labs/mcp-go") && !slices.Contains(g[pkg], ip) {
				g[pkg] = append(g[pkg], ip)
			}
		}
		if _, ok := g[pkg]; !ok {
			g[pkg] = nil
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading the module's imports: %v", err)
	}
	for _, pkg := range []string{"proxy", "proxy/scan", "proxy/wire", "proxy/stdio", "proxy/httpguard", "rules", "audit", "internal/testkit"} {
		if _, ok := g[pkg]; !ok {
			t.Fatalf("found no package %s under %s: the test reads the wrong tree", pkg, root)
		}
	}
	return g
}

// reach returns every package pkg imports, directly or not, with the path
// of imports that reaches each.
func (g graph) reach(pkg string) map[string][]string {
	via := map[string][]string{}
	queue := []string{pkg}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, dep := range g[p] {
			if _, seen := via[dep]; seen || dep == pkg {
				continue
			}
			via[dep] = append(slices.Clone(via[p]), dep)
			queue = append(queue, dep)
		}
	}
	return via
}

// matches reports whether pkg is pattern, or under it when pattern ends
// in "/...".
func matches(pattern, pkg string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == prefix || strings.HasPrefix(pkg, prefix+"/")
	}
	return pkg == pattern
}

func matchesAny(patterns []string, pkg string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return matches(p, pkg) })
}

// TestLeavesOfProxyImportOnlyLeaves pins proxy's leaf packages: what they
// may import of the module, directly or not. Nothing in them reaches back
// to proxy or upstream; only proxy/ask, the asker, reaches audit (what it
// records), the approvals and the state store's interfaces.
func TestLeavesOfProxyImportOnlyLeaves(t *testing.T) {
	t.Parallel()
	g := loadGraph(t)
	tests := []struct {
		pkg     string
		mayUse  []string // module packages it may reach (mcp-go aside)
		because string
	}{
		{"proxy/scan", []string{"internal/secrets", "rules", "internal/enumtext", "internal/hostport", "internal/keyfold", "internal/textcut"},
			"result scanning is a leaf: the detector and the policy's results: vocabulary, nothing of proxy"},
		{"proxy/wire", []string{"internal/rawjson"},
			"the byte plumbing knows nothing of policy"},
		{"proxy/stdio", []string{"proxy/wire", "internal/rawjson"},
			"a transport runs in front of mcp-go's server and knows nothing of policy"},
		{"proxy/httpguard", []string{"internal/hostport", "proxy/wire", "internal/rawjson"},
			"the HTTP listener's defences run before any MCP processing and know nothing of policy"},
		{"proxy/drain", nil,
			"counting the requests in progress for shutdown knows nothing of MCP or policy"},
		{"proxy/toolscreen", []string{"internal/invisible"},
			"judging a definition for poisoning reads only the definition: nothing of policy or proxy"},
		{"proxy/connect", []string{"rules", "internal/egress", "internal/enumtext", "internal/hostport", "internal/keyfold", "internal/textcut"},
			"a connection's vocabulary is the rules' and the egress proxy's address classes, nothing of proxy"},
		{"proxy/ondisk", []string{"rules", "internal/enumtext", "internal/hostport", "internal/keyfold", "internal/textcut"},
			"reading paths on disk is a leaf: the rules' path forms and the file system, nothing of proxy"},
		{"proxy/naming", []string{"rules", "internal/enumtext", "internal/hostport", "internal/keyfold", "internal/textcut"},
			"tool names are a pure vocabulary: the rules' name grammar, nothing of proxy or of a session"},
		{"proxy/roots", nil,
			"a client's roots are asked of its session and kept: nothing of policy or proxy"},
		{"proxy/ask", []string{"proxy/roots", "rules", "audit", "proxy/scan", "internal/approvals", "internal/argview", "internal/invisible", "internal/state",
			"internal/secrets", "internal/textcut", "internal/atomicfile", "internal/enumtext", "internal/httpserve", "internal/hostport", "internal/keyfold"},
			"the asker puts a Question to the human through the client and the resolvers, and keeps grants in the state store's interfaces (not a store): nothing of proxy, upstream or the transports"},
	}
	for _, tt := range tests {
		t.Run(tt.pkg, func(t *testing.T) {
			t.Parallel()
			for dep, via := range g.reach(tt.pkg) {
				if strings.HasPrefix(dep, "github.com/mark3labs/mcp-go") {
					continue
				}
				if !matchesAny(tt.mayUse, dep) {
					t.Errorf("%s reaches %s (via %s): %s; move what it needs into %s or a leaf it may use (%s)",
						tt.pkg, dep, strings.Join(via, " → "), tt.because, tt.pkg, strings.Join(tt.mayUse, ", "))
				}
			}
		})
	}
}

// TestMustNotArrows pins the design's "must not" arrows: rules and audit
// are pure of what serves and forwards, rules imports no MCP SDK, and
// proxy is imported only by the application that assembles it.
func TestMustNotArrows(t *testing.T) {
	t.Parallel()
	g := loadGraph(t)
	tests := []struct {
		from, to []string
		because  string
	}{
		{[]string{"rules/..."}, []string{"proxy/...", "upstream/...", "audit/...", "internal/app", "internal/state/...", "github.com/mark3labs/mcp-go/..."},
			"rules parses, compiles and decides: no MCP SDK, no I/O, nothing of what serves"},
		{[]string{"audit/..."}, []string{"proxy/...", "upstream/...", "rules/...", "internal/app", "internal/state/..."},
			"audit records what was decided and never decides anything"},
		{[]string{"proxy/ask", "proxy/connect", "proxy/drain", "proxy/naming", "proxy/roots", "proxy/ondisk", "proxy/scan", "proxy/toolscreen", "proxy/wire", "proxy/stdio", "proxy/httpguard", "proxy/sessiontable", "proxy/streamable"}, []string{"proxy"},
			"proxy imports its leaves, nothing back"},
		{[]string{"upstream/..."}, []string{"proxy/...", "internal/app"},
			"upstream owns the upstream sessions; proxy calls it, not the other way"},
	}
	for _, tt := range tests {
		for pkg := range g {
			if !matchesAny(tt.from, pkg) {
				continue
			}
			for dep, via := range g.reach(pkg) {
				if matchesAny(tt.to, dep) {
					t.Errorf("%s reaches %s (via %s): %s", pkg, dep, strings.Join(via, " → "), tt.because)
				}
			}
		}
	}
	importers := []string{"internal/app", "cmd/mcpwarden", "bench"} // bench profiles a proxy in process
	for _, pkg := range slices.Sorted(maps.Keys(g)) {
		if slices.Contains(g[pkg], "proxy") && !slices.Contains(importers, pkg) {
			t.Errorf("%s imports proxy: only %s assemble it (the composition root is internal/app; the bench profiles one)", pkg, strings.Join(importers, " and "))
		}
	}
}

// TestNoNonTestImportOfTestkit keeps internal/testkit to tests: only a
// package that is itself test support may import it outside _test.go
// files. What non-test code needs of it (the bench's HAProxy config, say)
// moves to a package of its own. The other test support (statetest,
// apptest) is reached from tests only.
func TestNoNonTestImportOfTestkit(t *testing.T) {
	t.Parallel()
	g := loadGraph(t)
	testSupport := []string{"internal/testkit/...", "internal/state/statetest", "internal/app/apptest"}
	for _, pkg := range slices.Sorted(maps.Keys(g)) {
		if matchesAny(testSupport, pkg) {
			continue
		}
		if slices.ContainsFunc(g[pkg], func(dep string) bool { return matches("internal/testkit/...", dep) }) {
			t.Errorf("%s imports internal/testkit in non-test code: move what it needs to a package of its own (as internal/haproxy) or into a _test.go file", pkg)
		}
	}
	// The test support itself is reached only from tests.
	for _, pkg := range slices.Sorted(maps.Keys(g)) {
		if matchesAny(testSupport, pkg) {
			continue
		}
		for dep, via := range g.reach(pkg) {
			if dep == "internal/state/statetest" || dep == "internal/app/apptest" {
				t.Errorf("%s reaches %s (via %s) in non-test code", pkg, dep, strings.Join(via, " → "))
			}
		}
	}
}
