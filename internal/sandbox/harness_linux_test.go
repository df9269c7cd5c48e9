package sandbox

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// A mode is how the warden runs the malicious server.
type mode struct {
	name string
	tier Tier // TierAuto: no sandbox
}

var (
	plain  = mode{"unsandboxed", TierAuto}
	nsTier = mode{"namespaces", TierNamespaces}
	llTier = mode{"landlock", TierLandlock}
	tiers  = []mode{nsTier, llTier}
)

// secrets are in the warden's environment, as in mcpwarden's.
var secrets = []string{
	"MCPWARDEN_TOKEN_KEY=key-that-decrypts-every-token",
	"GITHUB_TOKEN=ghp_0123456789abcdefghijklmnopqrstuvwxyz",
	"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
}

// A world is one attempt's files: the user's real home with its secrets,
// mcpwarden's state directory, and the sandbox's own workspace, HOME and
// TMPDIR, all owned by the unprivileged user.
type world struct {
	root, home, state, work, sbxHome, sbxTmp string
}

func newWorld(t *testing.T) world {
	t.Helper()
	root, err := os.MkdirTemp(env.dir, "world-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	os.Chmod(root, 0o755)
	w := world{root: root, home: root + "/home", state: root + "/state", work: root + "/work",
		sbxHome: root + "/sbx-home", sbxTmp: root + "/sbx-tmp"}
	files := map[string]string{
		w.home + "/.ssh/id_ed25519":      "-----BEGIN OPENSSH PRIVATE KEY-----\nfake\n",
		w.home + "/.ssh/authorized_keys": "ssh-ed25519 AAAA me\n",
		w.home + "/.aws/credentials":     "[default]\naws_secret_access_key = fake\n",
		w.home + "/.bashrc":              "# bashrc\n",
		w.state + "/config.yaml":         "servers: {}\n",
		w.state + "/audit.log":           "{\"kind\":\"decision\"}\n",
		w.state + "/tokens.json":         "{\"github\":\"encrypted\"}\n",
		w.work + "/README":               "the workspace\n",
		w.sbxHome + "/.keep":             "",
		w.sbxTmp + "/.keep":              "",
	}
	for path, text := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	filepath.Walk(root, func(path string, _ os.FileInfo, err error) error {
		if err == nil && path != root {
			os.Lchown(path, env.uid, env.gid)
		}
		return nil
	})
	return w
}

// policy is the sandbox policy of the tests' server in m: its workspace,
// private HOME and TMPDIR, a small memory limit and the default process
// limit (in tier landlock the kernel counts the user's every task, and
// the tests run many at once).
func (w world) policy(m mode) Policy {
	return Policy{Tier: m.tier, Home: w.sbxHome, TmpDir: w.sbxTmp, Write: []string{w.work},
		Limits: Limits{MemoryBytes: 256 << 20}}
}

// A session is the warden running the malicious server.
type session struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *testkit.LockedBuffer
	id     int
}

type sessionOpts struct {
	policy *Policy  // nil: the world's policy for the mode
	tty    *os.File // the warden's controlling terminal
	argv   []string // the server; default the malicious one
	noInit bool     // do not initialize: the server may not start
	env    []string // more of the warden's environment
}

// start runs the warden as the unprivileged user with secrets in its
// environment, and the malicious server under it in mode m.
func start(t *testing.T, w world, m mode, o sessionOpts) *session {
	t.Helper()
	needUser(t)
	argv := o.argv
	if argv == nil {
		argv = []string{env.evil}
	}
	how := "plain"
	if m != plain {
		p := w.policy(m)
		if o.policy != nil {
			p = *o.policy
		}
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		how = string(b)
	}
	cmd := exec.Command(env.self, append([]string{wardenArg, how}, argv...)...)
	// A race-detector build sleeps a second at exit unless told not to.
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + w.home, "LANG=C.UTF-8", "GORACE=atexit_sleep_ms=0"}, secrets...)
	cmd.Env = append(cmd.Env, o.env...)
	cmd.Dir = w.root
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: env.cred}
	if o.tty != nil {
		cmd.Env = append(cmd.Env, "WARDEN_TTY=1")
		cmd.ExtraFiles = []*os.File{o.tty}
		cmd.Stderr = o.tty
	}
	s := &session{t: t, cmd: cmd, stderr: &testkit.LockedBuffer{}}
	if o.tty == nil {
		cmd.Stderr = s.stderr
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s.in, s.out = in, bufio.NewReader(out)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.stop() })
	if o.noInit {
		return s
	}
	s.send(map[string]any{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "sandbox-test", "version": "1"}}})
	if _, err := s.answer(0); err != nil {
		t.Fatalf("%s: initialize: %v; warden stderr: %s", m.name, err, s.stderr)
	}
	s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	return s
}

func (s *session) send(msg any) {
	b, _ := json.Marshal(msg)
	s.in.Write(append(b, '\n'))
}

// answer reads until the answer to id.
func (s *session) answer(id int) (json.RawMessage, error) {
	type line struct {
		ID     *int            `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			s.cmd.Process.Kill()
		}
	}()
	for {
		b, err := s.out.ReadBytes('\n')
		if err != nil {
			return nil, fmt.Errorf("the server's output ended: %w", err)
		}
		var l line
		if json.Unmarshal(b, &l) == nil && l.ID != nil && *l.ID == id {
			if l.Error != nil {
				return nil, fmt.Errorf("error %s", l.Error)
			}
			return l.Result, nil
		}
	}
}

// call calls a tool and returns its text.
func (s *session) call(tool string, a, b string) string {
	s.t.Helper()
	s.id++
	s.send(map[string]any{"jsonrpc": "2.0", "id": s.id, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": map[string]string{"a": a, "b": b}}})
	res, err := s.answer(s.id)
	if err != nil {
		return "NO ANSWER: " + err.Error()
	}
	var r struct {
		Content []struct{ Text string } `json:"content"`
	}
	json.Unmarshal(res, &r)
	if len(r.Content) == 0 {
		return "NO TEXT: " + string(res)
	}
	return r.Content[0].Text
}

// stop ends the server as mcpwarden does, by closing its input, and waits
// for the warden.
func (s *session) stop() {
	if s.in == nil {
		return
	}
	s.in.Close()
	s.in = nil
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
}

// report is the sandbox report the warden printed, waiting a while for
// it.
func (s *session) report() (Report, bool) {
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		for _, l := range strings.Split(s.stderr.String(), "\n") {
			// A line still being written may end in a nested object's
			// brace: only a whole report is taken.
			var r Report
			if b, ok := strings.CutPrefix(l, "REPORT "); ok && json.Unmarshal([]byte(b), &r) == nil {
				return r, true
			}
		}
	}
	return Report{}, false
}

// An escape is one attempt: what to call in a fresh world, in mode m.
type escape func(t *testing.T, w world, m mode) string

// checkEscape runs the attempt unsandboxed (it must escape: the attempt is
// real) and in each tier (it must not), each against a fresh world.
func checkEscape(t *testing.T, try escape) {
	t.Helper()
	checkModes(t, try, true)
}

// checkEscapeInTurn is checkEscape one mode at a time.
func checkEscapeInTurn(t *testing.T, try escape) {
	t.Helper()
	checkModes(t, try, false)
}

func checkModes(t *testing.T, try escape, parallel bool) {
	t.Helper()
	for _, m := range append([]mode{plain}, tiers...) {
		t.Run(m.name, func(t *testing.T) {
			if parallel {
				t.Parallel()
			}
			got := try(t, newWorld(t), m)
			escaped := strings.HasPrefix(got, "ESCAPED")
			if m == plain && !escaped {
				t.Fatalf("unsandboxed, the attempt failed, so it proves nothing: %s", got)
			}
			if m != plain && escaped {
				t.Fatalf("in tier %s the server escaped: %s", m.name, got)
			}
			t.Logf("%s: %s", m.name, got)
		})
	}
}

// tool is the escape of calling one tool with arguments computed from
// the world.
func tool(name string, args func(w world) (a, b string)) escape {
	return func(t *testing.T, w world, m mode) string {
		a, b := args(w)
		return start(t, w, m, sessionOpts{}).call(name, a, b)
	}
}

// listener owns a loopback TCP listener for the test's life.
func listener(t *testing.T) string {
	l := testkit.Loopback(t)
	testkit.ServeConns(t, l, func(net.Conn) {})
	return l.Addr().String()
}
