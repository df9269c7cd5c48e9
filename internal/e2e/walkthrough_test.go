package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// walkthroughPage is the page TestWritingAPolicyWalkthroughWorksAsWritten
// runs, relative to the repository.
const walkthroughPage = "docs/writing-a-policy.md"

// A docBlock is one fenced code block of a Markdown page: its language,
// its lines, and whether only blank lines part it from the block before.
type docBlock struct {
	lang     string
	lines    []string
	adjacent bool
}

// docBlocks returns the fenced code blocks of page, in order.
func docBlocks(page string) []docBlock {
	var blocks []docBlock
	var cur *docBlock
	gap := ""
	for _, l := range strings.Split(page, "\n") {
		switch {
		case strings.HasPrefix(l, "```") && cur == nil:
			cur = &docBlock{lang: strings.TrimPrefix(l, "```"), adjacent: len(blocks) > 0 && strings.TrimSpace(gap) == ""}
		case strings.HasPrefix(l, "```"):
			blocks = append(blocks, *cur)
			cur, gap = nil, ""
		case cur != nil:
			cur.lines = append(cur.lines, l)
		default:
			gap += l
		}
	}
	return blocks
}

// checkedOutput matches the commands whose output the page shows in full
// and the test compares: the rest print times and IDs.
var checkedOutput = regexp.MustCompile(`^mcpwarden (policy suggest|policy diff|validate|test) `)

// recordedAt matches where a request was recorded in the walkthrough's
// log, which depends on how many events the servers' start wrote.
var recordedAt = regexp.MustCompile(`(examples/shadow-audit\.jsonl):\d+`)

// TestWritingAPolicyWalkthroughWorksAsWritten runs docs/writing-a-policy.md
// as a reader would, in a fresh clone of the repository: every command of
// its sh blocks in order, with the pinned MCP Inspector as the client; the
// review between them is done as the page says (the suggestion pasted
// under policy.allow, enforce: shadow deleted, the page's cases written to
// examples/mine.cases.yaml, later one allow rule added under --watch). The
// output the page shows for suggest, validate, test and diff must be what
// the commands print, the clone's path for /home/you/mcpwarden.
//
// What differs from a reader's machine, as in
// TestReadmeSetUpCommandsWorkFromAFreshClone: mcpwarden is the binary
// TestMain built, listen takes a free port and the servers start with node
// from the pinned .tools/ instead of npx, through MCPWARDEN_* variables;
// the Inspector is the pinned one.
func TestWritingAPolicyWalkthroughWorksAsWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("clones the repository and runs the walkthrough")
	}
	t.Parallel()
	page, err := os.ReadFile(filepath.Join(repoRoot, walkthroughPage))
	if err != nil {
		t.Fatal(err)
	}
	blocks := docBlocks(string(page))
	var cases string
	for _, b := range blocks {
		if b.lang == "yaml" && len(b.lines) > 0 && b.lines[0] == "cases:" {
			cases = strings.Join(b.lines, "\n") + "\n"
		}
	}
	if cases == "" {
		t.Fatalf("%s shows no case file (a yaml block starting with cases:)", walkthroughPage)
	}

	clone := filepath.Join(t.TempDir(), "mcpwarden")
	if out, err := exec.CommandContext(t.Context(), "git", "clone", "--quiet", repoRoot, clone).CombinedOutput(); err != nil {
		t.Skipf("the repository cannot be cloned (not a git checkout?): %v\n%s", err, out)
	}
	listen := testkit.FreeAddr(t)
	env := append(os.Environ(),
		"PATH="+filepath.Dir(binary)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"MCPWARDEN_LISTEN="+listen,
		"MCPWARDEN_SERVERS__FS__COMMAND=node",
		fmt.Sprintf("MCPWARDEN_SERVERS__FS__ARGS=[%q, .]", filesystemIndex()),
		"MCPWARDEN_SERVERS__EVERYTHING__COMMAND=node",
		fmt.Sprintf("MCPWARDEN_SERVERS__EVERYTHING__ARGS=[%q, stdio]", filepath.Join(npmMods, "@modelcontextprotocol", "server-everything", "dist", "index.js")),
	)
	inClone := func(s string) string { return strings.ReplaceAll(s, "/home/you/mcpwarden", clone) }
	var (
		serving    *walkthroughServe
		suggestion string
		ran        int
		compared   []string
		widened    bool
	)
	for i, b := range blocks {
		if b.lang != "sh" {
			continue
		}
		for _, line := range b.lines {
			cmd := strings.TrimSpace(line)
			if cmd == "" || strings.HasPrefix(cmd, "#") {
				continue
			}
			ran++
			switch {
			case strings.HasPrefix(cmd, "mcpwarden serve "):
				serving.stop(t)
				serving = startWalkthroughServe(t, clone, env, listen, strings.Fields(cmd)[1:])
				continue
			case strings.HasPrefix(cmd, "I="):
				value := strings.Trim(strings.TrimPrefix(cmd, "I="), `"`)
				value = strings.Replace(value, "npx @modelcontextprotocol/inspector@2", filepath.Join(npmBin, "mcp-inspector"), 1)
				env = append(env, "I="+strings.Replace(value, "http://127.0.0.1:8765/mcp", "http://"+listen+"/mcp", 1))
				continue
			}
			run := exec.CommandContext(t.Context(), "bash", "-c", cmd)
			run.Dir, run.Env = clone, env
			out, err := run.CombinedOutput()
			code := run.ProcessState.ExitCode()
			switch {
			case cmd == refusedCall && serving.enforces():
				if code == 0 {
					t.Errorf("%s under the enforced policy: exit 0, want the ask refused\n%s", cmd, out)
				}
				widenUnderWatch(t, clone, serving)
				widened = true
			case strings.HasPrefix(cmd, "mcpwarden policy diff "):
				if code != 1 {
					t.Fatalf("%s: exit %d (%v), want 1 (decisions change)\n%s", cmd, code, err, out)
				}
			case code != 0:
				t.Fatalf("%s: exit %d (%v)\n%s", cmd, code, err, out)
			}
			switch {
			case strings.HasPrefix(cmd, "mcpwarden policy suggest "):
				suggestion = string(out)
			case strings.HasPrefix(cmd, "mcpwarden audit tail --event policy_changed ") && !strings.Contains(string(out), "policy_changed changed=1 widened=1"):
				t.Errorf("%s printed no policy_changed event of the widening edit:\n%s", cmd, out)
			case strings.HasPrefix(cmd, "mcpwarden audit verify ") && !strings.HasPrefix(string(out), "ok:"):
				t.Errorf("%s:\n%s", cmd, out)
			}
			if next := i + 1; checkedOutput.MatchString(cmd) && next < len(blocks) && blocks[next].adjacent {
				compared = append(compared, cmd)
				want := recordedAt.ReplaceAllString(inClone(strings.Join(blocks[next].lines, "\n")), "$1:N")
				if got := recordedAt.ReplaceAllString(strings.TrimRight(string(out), "\n"), "$1:N"); got != want {
					t.Errorf("%s printed:\n%s\nthe page shows:\n%s", cmd, got, want)
				}
			}
			if strings.HasPrefix(cmd, "cp ") {
				reviewWalkthroughConfig(t, clone, suggestion, cases)
			}
		}
	}
	if ran < 10 || len(compared) != 4 {
		t.Fatalf("%s has %d commands, %d of them with their output shown (%q); want the whole walkthrough, with the output of suggest, validate, test and diff", walkthroughPage, ran, len(compared), compared)
	}
	if !widened {
		t.Fatalf("%s never makes the call %q under the enforced policy, after which it widens it", walkthroughPage, refusedCall)
	}
	serving.stop(t)
}

// refusedCall is the walkthrough's call that the enforced policy asks
// about, and the Inspector, which cannot answer, has refused.
const refusedCall = "$I --tool-name fs__list_directory --tool-arg path=docs"

// widenUnderWatch makes the edit the walkthrough shows under --watch,
// one allow rule more in examples/mine.yaml, and waits for its warning.
func widenUnderWatch(t *testing.T, clone string, serving *walkthroughServe) {
	t.Helper()
	mine := filepath.Join(clone, "examples", "mine.yaml")
	data, err := os.ReadFile(mine)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(data), allowAnchor, allowAnchor+"    - \"mcp:fs:list_directory\"\n", 1)
	if err := os.WriteFile(mine, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "the --watch reload's widening warning", func() bool {
		return strings.Contains(serving.stderr.String(), "the reloaded policy allows requests the old one refused")
	})
}

// allowAnchor is the last rule of examples/shadow.yaml's allow list, under
// which the walkthrough pastes.
const allowAnchor = "    - \"mcp:fs:list_allowed_directories\"\n"

// reviewWalkthroughConfig does the review the walkthrough describes after
// copying the config: the suggestion's allow list pasted under
// policy.allow of examples/mine.yaml, its enforce: shadow line deleted,
// and the page's cases written to examples/mine.cases.yaml.
func reviewWalkthroughConfig(t *testing.T, clone, suggestion, cases string) {
	t.Helper()
	mine := filepath.Join(clone, "examples", "mine.yaml")
	data, err := os.ReadFile(mine)
	if err != nil {
		t.Fatalf("the walkthrough's cp made no examples/mine.yaml: %v", err)
	}
	cfg := string(data)
	if !strings.Contains(cfg, allowAnchor) {
		t.Fatalf("examples/mine.yaml has no allow rule %q to paste under:\n%s", allowAnchor, cfg)
	}
	cfg = strings.Replace(cfg, allowAnchor, allowAnchor+pastedUnderAllow(t, suggestion), 1)
	var kept []string
	for _, l := range strings.Split(cfg, "\n") {
		if !strings.HasPrefix(l, "enforce: shadow") {
			kept = append(kept, l)
		}
	}
	if err := os.WriteFile(mine, []byte(strings.Join(kept, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(clone, "examples", "mine.cases.yaml"), []byte(cases), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A walkthroughServe is a mcpwarden serve the walkthrough started.
type walkthroughServe struct {
	cmd     *exec.Cmd
	done    chan error
	stderr  *testkit.LockedBuffer
	stopped bool
}

// enforces reports whether s serves a config without shadow mode: the
// walkthrough's second, which it serves with --watch.
func (s *walkthroughServe) enforces() bool {
	return s != nil && strings.Contains(strings.Join(s.cmd.Args, " "), "--watch")
}

// startWalkthroughServe starts mcpwarden with args in clone and waits
// until it listens on listen and its servers are up.
func startWalkthroughServe(t *testing.T, clone string, env []string, listen string, args []string) *walkthroughServe {
	t.Helper()
	s := &walkthroughServe{done: make(chan error, 1), stderr: &testkit.LockedBuffer{}}
	s.cmd = exec.Command(binary, args...)
	s.cmd.Dir, s.cmd.Env, s.cmd.Stderr, s.cmd.SysProcAttr = clone, env, s.stderr, groupAttr()
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.done <- s.cmd.Wait() }()
	t.Cleanup(func() { s.stop(t) })
	testkit.Eventually(t, 60*time.Second, "mcpwarden "+strings.Join(args, " ")+" ready on "+listen, func() bool {
		return strings.Contains(s.stderr.String(), "mcpwarden ready")
	})
	return s
}

// stop ends s, if it runs, and waits for it.
func (s *walkthroughServe) stop(t *testing.T) {
	t.Helper()
	if s == nil || s.stopped {
		return
	}
	s.stopped = true
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = killGroup(s.cmd.Process.Pid)
		<-s.done
		t.Errorf("mcpwarden did not exit within 10s of SIGTERM")
	}
	if t.Failed() {
		t.Logf("mcpwarden %s stderr:\n%s", strings.Join(s.cmd.Args[1:], " "), s.stderr.String())
	}
}
