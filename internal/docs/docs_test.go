// Package docs holds the tests of mcpwarden's documentation: that every
// relative link and #anchor in README.md and docs/*.md resolves, that the
// README keeps its two set-up commands for a fresh machine, each running
// something that exists, and that no page repeats a paragraph.
package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// root is the module root, two directories up.
func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(r, "go.mod")); err != nil {
		t.Fatalf("the module root %s has no go.mod: %v", r, err)
	}
	return r
}

// pages are README.md and docs/*.md, relative to the root.
func pages(t *testing.T, r string) []string {
	t.Helper()
	ps, err := filepath.Glob(filepath.Join(r, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md"}
	for _, p := range ps {
		rel, _ := filepath.Rel(r, p)
		out = append(out, filepath.ToSlash(rel))
	}
	return out
}

// prose is the text of a Markdown page outside fenced code blocks and
// inline code, line by line (a code line is blank).
func prose(text string) []string {
	lines := strings.Split(text, "\n")
	fenced := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			lines[i] = ""
			continue
		}
		if fenced {
			lines[i] = ""
			continue
		}
		lines[i] = inlineCode.ReplaceAllString(l, "``")
	}
	return lines
}

var (
	inlineCode = regexp.MustCompile("`[^`]*`")
	link       = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	heading    = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	htmlAnchor = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
)

// slug is the anchor GitHub gives a heading: lower case, punctuation
// other than - and _ dropped, spaces as -.
func slug(h string) string {
	h = strings.ToLower(strings.ReplaceAll(h, "`", ""))
	var b strings.Builder
	for _, r := range h {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors are the anchors of a Markdown page: its headings' slugs (a
// repeated one numbered as GitHub does) and explicit <a id>s.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(l, -1) {
			out[m[1]] = true
		}
		m := heading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

func TestEveryRelativeLinkAndAnchorInTheDocsResolves(t *testing.T) {
	t.Parallel()
	r := root(t)
	links := 0
	for _, page := range pages(t, r) {
		text, err := os.ReadFile(filepath.Join(r, page))
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range prose(string(text)) {
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				links++
				where := fmt.Sprintf("%s:%d: link %s", page, n+1, target)
				file, frag, _ := strings.Cut(target, "#")
				dest := filepath.Join(r, page)
				if file != "" {
					dest = filepath.Join(filepath.Dir(dest), filepath.FromSlash(file))
					if _, err := os.Stat(dest); err != nil {
						t.Errorf("%s: no such file or directory: correct the path, relative to %s", where, page)
						continue
					}
				}
				if frag == "" {
					continue
				}
				if !strings.HasSuffix(dest, ".md") {
					t.Errorf("%s: an anchor into a file that is not Markdown", where)
					continue
				}
				destText, err := os.ReadFile(dest)
				if err != nil {
					t.Fatal(err)
				}
				if !anchors(string(destText))[frag] {
					t.Errorf("%s: %s has no heading with the anchor #%s", where, filepath.Base(dest), frag)
				}
			}
		}
	}
	if links < 20 {
		t.Errorf("found %d relative links, want the many the README and docs have: is the link pattern broken?", links)
	}
}

func TestSlugIsGitHubsAnchorOfAHeading(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, heading, want string
	}{
		{"Words are lower-cased and joined by hyphens.", "Container images", "container-images"},
		{"Punctuation other than hyphens is dropped.", "Sandbox: the servers mcpwarden starts", "sandbox-the-servers-mcpwarden-starts"},
		{"Apostrophes are dropped.", "Compared with the client's own permission settings", "compared-with-the-clients-own-permission-settings"},
		{"Inline code keeps its text without the backticks and dots.", "`servers.<name>.policy`", "serversnamepolicy"},
		{"Underscores stay.", "`auth.bearer_token_env`", "authbearer_token_env"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := slug(tt.heading); got != tt.want {
				t.Errorf("slug(%q) = %q, want %q", tt.heading, got, tt.want)
			}
		})
	}
}

func TestTheReadmeHasExactlyTwoSetUpCommandsAndWhatTheyRunExists(t *testing.T) {
	t.Parallel()
	r := root(t)
	readme, err := os.ReadFile(filepath.Join(r, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := testkit.ReadmeSetupCommands(string(readme))
	if err != nil {
		t.Fatal(err)
	}
	if len(cmds) != 2 {
		t.Fatalf("README.md's set-up section has %d commands %q, want exactly two: one that runs mcpwarden, one that runs the tests", len(cmds), cmds)
	}

	// The first runs mcpwarden from the clone: go run of a main package,
	// with a config that exists.
	run := strings.Fields(cmds[0])
	if len(run) < 3 || run[0] != "go" || run[1] != "run" {
		t.Fatalf("the first set-up command %q does not start with go run", cmds[0])
	}
	main, err := os.ReadFile(filepath.Join(r, filepath.FromSlash(run[2]), "main.go"))
	if err != nil || !strings.Contains(string(main), "\npackage main\n") && !strings.HasPrefix(string(main), "package main\n") {
		t.Errorf("the first set-up command runs %s, which has no main.go of package main (%v)", run[2], err)
	}
	for i, arg := range run {
		if arg == "--config" && i+1 < len(run) {
			if _, err := os.Stat(filepath.Join(r, filepath.FromSlash(run[i+1]))); err != nil {
				t.Errorf("the first set-up command's config %s does not exist: %v", run[i+1], err)
			}
		}
	}

	// The second runs the tests: an executable script, the one CI runs.
	test := strings.Fields(cmds[1])
	info, err := os.Stat(filepath.Join(r, filepath.FromSlash(test[0])))
	if err != nil {
		t.Fatalf("the second set-up command %q runs no file: %v", cmds[1], err)
	}
	if info.Mode()&0o111 == 0 {
		t.Errorf("%s is not executable", test[0])
	}
	ci, err := os.ReadFile(filepath.Join(r, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ci), cmds[1]) {
		t.Errorf(".ci/run does not run the README's test command %q: CI must run what the README says", cmds[1])
	}
}

func TestTheReadmeIsAtMostThreeHundredLines(t *testing.T) {
	t.Parallel()
	text, err := os.ReadFile(filepath.Join(root(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(text), "\n"); n > 300 {
		t.Errorf("README.md has %d lines, want at most 300: move reference material into docs/", n)
	}
}

// TestNoPageRepeatsAParagraph catches an edit that pasted a section twice:
// no paragraph of 200 characters or more appears twice in README.md,
// docs/*.md or bench/*.md. Generated pages (docs/config.md repeats a
// type's description where the type is used) are left out.
func TestNoPageRepeatsAParagraph(t *testing.T) {
	t.Parallel()
	r := root(t)
	bench, err := filepath.Glob(filepath.Join(r, "bench", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	names := pages(t, r)
	for _, p := range bench {
		rel, _ := filepath.Rel(r, p)
		names = append(names, filepath.ToSlash(rel))
	}
	for _, name := range names {
		text, err := os.ReadFile(filepath.Join(r, filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(string(text), "<!-- Generated ") {
			continue
		}
		lineOf := map[string]int{}
		line := 1
		for _, p := range strings.Split(string(text), "\n\n") {
			para := strings.TrimSpace(p)
			if len(para) >= 200 {
				at := line + strings.Count(p[:strings.Index(p, para)], "\n")
				if first, ok := lineOf[para]; ok {
					t.Errorf("%s:%d repeats the paragraph of line %d (%.60q…): keep one of them", name, at, first, para)
				} else {
					lineOf[para] = at
				}
			}
			line += strings.Count(p, "\n") + 2
		}
	}
}
