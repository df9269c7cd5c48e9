package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// A replicaSet is many mcpwarden serve processes sharing one
// redis-server, behind HAProxy doing plain round robin (no affinity): the
// deployment of examples/kubernetes, on this machine. Every replica runs
// the fixture's config, with its own listen address, metrics listener,
// approvals page, audit log and replica id set through MCPWARDEN_*
// variables.
type replicaSet struct {
	f        *fixture
	redis    *testkit.RedisServer
	lb       *testkit.HAProxy
	replicas []*replica
}

// A replica is one mcpwarden serve process of a replicaSet.
type replica struct {
	id        string
	addr      string // the MCP listener, host:port
	metrics   string // the metrics listener, host:port (/metrics, /readyz)
	approvals string // the approvals page, host:port
	auditPath string
	tokenFile string // the approvals page's token file
	cmd       *exec.Cmd
	exited    chan struct{} // closed when the process has ended, with err set
	err       error         // how it ended
	stderr    *testkit.LockedBuffer
}

// replicasFixture is the world of the many-replica tests: the Go server
// (read allowed, write asked, move denied) and a state server (remember,
// recall) that only the profile "memory" sees besides go, whose policy
// denies write. Asks time out after timeout; tokens ECHO and MEMORY
// select no profile and the memory profile.
func replicasFixture(t *testing.T, timeout string) *fixture {
	t.Helper()
	f := newFixture(t, testkit.FreeAddr(t), fmt.Sprintf("  go:\n    command: %q\n  mem:\n    command: %q", goServer.binary(t), stateServer.binary(t)), `  default: deny
  deny: ["mcp:go:move"]
  ask: ["mcp:go:write"]
  allow: ["mcp:go:read", "mcp:mem:*"]`)
	f.appendConfig(t, fmt.Sprintf(`ask:
  timeout: %s
  approvals: local
auth:
  bearer_token_env: PLAIN_TOKEN
profiles:
  readonly:
    servers: [go]
    tokens_env: [READONLY_TOKEN]
    policy:
      deny: ["mcp:go:write"]
`, timeout))
	return f
}

// The bearer tokens of replicasFixture.
const (
	plainToken    = "plain-secret"
	readonlyToken = "readonly-secret"
)

// startReplicas starts redis-server, n replicas of f's config sharing it
// and HAProxy in front of them, and waits until every replica is ready
// (its /readyz answers 200: upstreams up, state reachable).
func startReplicas(t *testing.T, f *fixture, n int) *replicaSet {
	t.Helper()
	rs := &replicaSet{f: f, redis: testkit.StartRedis(t)}
	f.appendConfig(t, fmt.Sprintf("state:\n  url: %q\n  namespace: e2e\n", rs.redis.URL()))
	var backends []string
	for i := range n {
		r := &replica{
			id:        fmt.Sprintf("replica-%d", i),
			addr:      testkit.FreeAddr(t),
			metrics:   testkit.FreeAddr(t),
			approvals: testkit.FreeAddr(t),
			auditPath: filepath.Join(f.dir, fmt.Sprintf("audit-%d.jsonl", i)),
			tokenFile: filepath.Join(f.dir, fmt.Sprintf("approvals-%d.json", i)),
		}
		r.start(t, f)
		rs.replicas = append(rs.replicas, r)
		backends = append(backends, r.addr)
	}
	for _, r := range rs.replicas {
		r.waitReady(t)
	}
	rs.lb = testkit.StartHAProxy(t, backends...)
	return rs
}

// url is the balancer's MCP endpoint.
func (rs *replicaSet) url() string { return rs.lb.URL("/mcp") }

// start starts the replica's process; it is stopped with SIGTERM (or
// found killed) when the test ends.
func (r *replica) start(t *testing.T, f *fixture) {
	t.Helper()
	r.stderr = &testkit.LockedBuffer{}
	r.cmd = exec.Command(binary, "serve", "--config", f.config, "--shutdown-grace", "2s")
	r.cmd.Env = append(os.Environ(),
		"MCPWARDEN_LISTEN="+r.addr,
		"MCPWARDEN_METRICS__LISTEN="+r.metrics,
		"MCPWARDEN_ASK__APPROVALS_LISTEN="+r.approvals,
		"MCPWARDEN_ASK__TOKEN_FILE="+r.tokenFile,
		"MCPWARDEN_AUDIT__PATH="+r.auditPath,
		"MCPWARDEN_REPLICA="+r.id,
		"PLAIN_TOKEN="+plainToken,
		"READONLY_TOKEN="+readonlyToken,
	)
	r.cmd.Stderr = r.stderr
	r.cmd.SysProcAttr = groupAttr()
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.exited = make(chan struct{})
	go func() {
		r.err = r.cmd.Wait()
		close(r.exited)
	}()
	t.Cleanup(func() {
		_ = r.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-r.exited:
		case <-time.After(15 * time.Second):
			_ = killGroup(r.cmd.Process.Pid)
			<-r.exited
			t.Errorf("%s did not exit within 15s of SIGTERM", r.id)
		}
		if t.Failed() {
			t.Logf("%s stderr:\n%s", r.id, r.stderr.String())
		}
	})
}

// waitReady waits until the replica's /readyz answers 200.
func (r *replica) waitReady(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-r.exited:
			t.Fatalf("%s exited before it was ready: %v\n%s", r.id, r.err, r.stderr.String())
		default:
		}
		code, _ := r.ready(t)
		if code == 200 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s was not ready within 60s (last answer %d)\n%s", r.id, code, r.stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ready fetches the replica's /readyz: its status (0 if it does not
// answer) and body.
func (r *replica) ready(t *testing.T) (int, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", r.metrics, 200*time.Millisecond)
	if err != nil {
		return 0, err.Error()
	}
	c.Close()
	resp, body := rawRequest(t, "GET", "http://"+r.metrics+"/readyz", nil, "")
	return resp.StatusCode, body
}

// kill ends the replica's process group with SIGKILL, as a crash or
// kill -9 would, and waits for it.
func (r *replica) kill(t *testing.T) {
	t.Helper()
	_ = killGroup(r.cmd.Process.Pid)
	select {
	case <-r.exited:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not die of SIGKILL", r.id)
	}
}

// auditLine is the part of a replica's audit line the many-replica tests
// read.
type auditLine struct {
	Event     string         `json:"event"`
	Replica   string         `json:"replica"`
	Session   string         `json:"session"`
	Tool      string         `json:"tool"`
	Decision  string         `json:"decision"`
	GrantedBy string         `json:"granted_by"`
	Principal string         `json:"principal"`
	Profile   string         `json:"profile"`
	Reason    string         `json:"reason"`
	Error     string         `json:"error"`
	Time      string         `json:"time"`
	Arguments map[string]any `json:"arguments"`
}

// decisions returns the decision events of every replica's audit log,
// each as its replica wrote it, sorted by time.
func (rs *replicaSet) decisions(t *testing.T) []auditLine {
	t.Helper()
	var out []auditLine
	for _, r := range rs.replicas {
		file, err := os.Open(r.auditPath)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(file)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var e auditLine
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Fatalf("%s: audit line %q is not JSON: %v", r.auditPath, sc.Text(), err)
			}
			if e.Replica != r.id {
				t.Errorf("%s: a line of replica %q in the log of %s", r.auditPath, e.Replica, r.id)
			}
			if e.Event == "decision" {
				out = append(out, e)
			}
		}
		file.Close()
	}
	slices.SortStableFunc(out, func(a, b auditLine) int { return strings.Compare(a.Time, b.Time) })
	return out
}

// replicasOf returns the distinct replicas that decided events, in order
// of first appearance.
func replicasOf(events []auditLine) []string {
	var out []string
	for _, e := range events {
		if !slices.Contains(out, e.Replica) {
			out = append(out, e.Replica)
		}
	}
	return out
}

// matching returns the events whose arguments' path contains mark.
func matching(events []auditLine, mark string) []auditLine {
	var out []auditLine
	for _, e := range events {
		if p, _ := e.Arguments["path"].(string); strings.Contains(p, mark) {
			out = append(out, e)
		}
	}
	return out
}

// describe lists events for a failure message.
func describe(events []auditLine) string {
	var b strings.Builder
	for _, e := range events {
		fmt.Fprintf(&b, "  %s %s session=%s %s %v %s/%s %s\n", e.Time, e.Replica, e.Session, e.Tool, e.Arguments["path"], e.Decision, e.GrantedBy, e.Reason)
	}
	return b.String()
}

// readTokenFile reads a replica's approvals token file, waiting for it to
// be written.
func readTokenFile(t *testing.T, path string) pageToken {
	t.Helper()
	var tok pageToken
	testkit.Eventually(t, 10*time.Second, "the approvals token file "+path, func() bool {
		data, err := os.ReadFile(path)
		return err == nil && json.Unmarshal(data, &tok) == nil && tok.URL != ""
	})
	return tok
}

// scrape fetches the replica's metrics, by series.
func (r *replica) scrape(t *testing.T) map[string]float64 {
	t.Helper()
	resp, body := rawRequest(t, "GET", "http://"+r.metrics+"/metrics", nil, "")
	if resp.StatusCode != 200 {
		t.Fatalf("%s /metrics: %d", r.id, resp.StatusCode)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(body, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(line[i+1:], &v); err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

// sumSeries adds up the samples whose series starts with prefix.
func sumSeries(m map[string]float64, prefix string) float64 {
	var sum float64
	for k, v := range m {
		if strings.HasPrefix(k, prefix) {
			sum += v
		}
	}
	return sum
}
