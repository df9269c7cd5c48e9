package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// stateServer keeps a value in its process (see ./stateserver).
var stateServer = &standIn{pkg: "stateserver"}

// An isolated is mcpwarden serving stateserver as "state", isolated, over
// HTTP behind two static tokens: alice's and bob's. Its upstream processes
// carry mark; stderr is mcpwarden's.
type isolated struct {
	f      *fixture
	mark   string
	url    string
	stderr *testkit.LockedBuffer
}

// startIsolated starts mcpwarden serving stateserver isolated as given,
// with extra server keys.
func startIsolated(t *testing.T, isolation, extra string) isolated {
	t.Helper()
	f, mark := isolatedFixture(t, isolation, extra)
	f.appendConfig(t, `profiles:
  alice:
    servers: [state]
    tokens_env: [ALICE_TOKEN]
  bob:
    servers: [state]
    tokens_env: [BOB_TOKEN]
`)
	url, stderr := startHTTP(t, f, "ALICE_TOKEN=alice-secret", "BOB_TOKEN=bob-secret")
	t.Cleanup(func() { // mcpwarden is built with -race
		if strings.Contains(stderr.String(), "WARNING: DATA RACE") {
			t.Error("mcpwarden reported a data race")
		}
	})
	return isolated{f: f, mark: mark, url: url, stderr: stderr}
}

// isolatedFixture is the config of mcpwarden serving stateserver isolated
// as given, with extra server keys, and the mark its processes carry; the
// caller adds who may connect.
func isolatedFixture(t *testing.T, isolation, extra string) (*fixture, string) {
	t.Helper()
	mark := fmt.Sprintf("isolation-%s-%d", t.Name(), time.Now().UnixNano())
	// Tier landlock: stateserver tells its children apart by their PIDs,
	// and in tier namespaces every child is PID 1 of its own namespace
	// (TestIsolatedChildrenAreSandboxed covers that tier).
	f := newFixture(t, testkit.FreeAddr(t), fmt.Sprintf(`  state:
    command: %q
    env: { %s: %q }
    isolation: %s
    sandbox: { tier: landlock }
%s`, stateServer.binary(t), markEnv, mark, isolation, extra), `  default: deny
  allow: ["mcp:state:*"]`)
	t.Cleanup(func() { killMarked(mark) })
	return f, mark
}

// connectAs connects to url with token, over the protocol with sessions.
func connectAs(t *testing.T, url, token string) *client.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, client.WithLegacyProtocolOnly())
	t.Cleanup(func() { c.Close() })
	initialize(t, c)
	return c
}

var statePattern = regexp.MustCompile(`^pid=(\d+) value=(.*)$`)

// state calls tool (remember with value, or recall) and returns the pid
// and value the child that served it reported.
func state(t *testing.T, c *client.Client, tool, value string) (pid, remembered string) {
	t.Helper()
	args := map[string]any{}
	if tool == "remember" {
		args["value"] = value
	}
	res := callTool(t, c, "state__"+tool, args)
	text := testkit.Text(res)
	m := statePattern.FindStringSubmatch(text)
	if res.IsError || m == nil {
		t.Fatalf("state__%s: %s", tool, text)
	}
	return m[1], m[2]
}

// instances returns, by principal, the instance each result event of the
// audit log at path names, in order.
func instances(t *testing.T, path string) map[string][]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e struct {
			Event, Principal, Instance string
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		if e.Event == "result" {
			out[e.Principal] = append(out[e.Principal], e.Instance)
		}
	}
	return out
}

// separate checks that a and b are served by two children, each keeping
// its own state, and returns their pids.
func separate(t *testing.T, a, b *client.Client) (pidA, pidB string) {
	t.Helper()
	pidA, _ = state(t, a, "remember", "a's secret")
	pidB, got := state(t, b, "recall", "")
	if pidA == pidB || got != "" {
		t.Fatalf("b got pid %s value %q; a's child is %s: they share one", pidB, got, pidA)
	}
	state(t, b, "remember", "b's")
	if pid, got := state(t, a, "recall", ""); pid != pidA || got != "a's secret" {
		t.Errorf("a's recall = pid %s value %q, want pid %s value %q", pid, got, pidA, "a's secret")
	}
	return pidA, pidB
}

func TestTwoPrincipalsGetTwoChildrenWithTheirOwnState(t *testing.T) {
	t.Parallel()
	iso := startIsolated(t, "per_principal", "")
	alicePID, bobPID := separate(t, connectAs(t, iso.url, "alice-secret"), connectAs(t, iso.url, "bob-secret"))
	again := connectAs(t, iso.url, "alice-secret") // another session, the same principal
	if pid, got := state(t, again, "recall", ""); pid != alicePID || got != "a's secret" {
		t.Errorf("alice's second session got pid %s value %q, want her child %s", pid, got, alicePID)
	}
	if n := len(marked(iso.mark)); n != 3 {
		t.Errorf("%d stateserver processes, want 3: the template and one child per principal", n)
	}

	byPrincipal := instances(t, iso.f.auditPath)
	if len(byPrincipal) != 2 {
		t.Fatalf("result events name principals %v, want two", byPrincipal)
	}
	for principal, names := range byPrincipal {
		for _, name := range names {
			if !strings.Contains(name, "principal:"+principal) || !strings.Contains(name, " pid ") {
				t.Errorf("%s's result names instance %q, want its child and pid", principal, name)
			}
		}
		want := bobPID
		if len(names) == 3 {
			want = alicePID
		}
		if !strings.HasSuffix(names[0], " pid "+want) {
			t.Errorf("%s's results name %q, want pid %s", principal, names, want)
		}
	}
}

func TestStolenSessionIDDoesNotReachAnotherPrincipalsChild(t *testing.T) {
	t.Parallel()
	iso := startIsolated(t, "per_session", "")
	alice := connectAs(t, iso.url, "alice-secret")
	alicePID, _ := state(t, alice, "remember", "alice's secret")

	// bob sends a call on alice's session id with his own token.
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"state__recall","arguments":{}}}`
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, iso.url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer bob-secret")
	req.Header.Set("Mcp-Session-Id", alice.GetSessionId())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	t.Logf("bob on alice's session id: %d %s", resp.StatusCode, data)
	if strings.Contains(string(data), "pid="+alicePID) || strings.Contains(string(data), "alice's secret") {
		t.Errorf("bob on alice's session id reached alice's child: %s", data)
	}
}

func TestTwoSessionsOfOnePrincipalGetTwoChildren(t *testing.T) {
	t.Parallel()
	iso := startIsolated(t, "per_session", "")
	separate(t, connectAs(t, iso.url, "alice-secret"), connectAs(t, iso.url, "alice-secret"))
}

func TestIdleChildIsReapedAndStartedAgainOnUse(t *testing.T) {
	t.Parallel()
	iso := startIsolated(t, "per_principal", "    isolation_idle_timeout: 500ms\n")
	alice := connectAs(t, iso.url, "alice-secret")
	pid, _ := state(t, alice, "remember", "before")
	if n := len(marked(iso.mark)); n != 2 {
		t.Fatalf("%d stateserver processes, want 2: the template and alice's child", n)
	}
	deadline := time.Now().Add(15 * time.Second)
	for len(marked(iso.mark)) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("alice's idle child is still running: %v", marked(iso.mark))
		}
		time.Sleep(50 * time.Millisecond)
	}
	again, got := state(t, alice, "recall", "")
	if again == pid || got != "" {
		t.Errorf("after reaping alice got pid %s value %q, want a new child without state (the old was %s)", again, got, pid)
	}
}

func TestIsolationCapRefusesOneChildTooMany(t *testing.T) {
	t.Parallel()
	iso := startIsolated(t, "per_principal", "    isolation_max: 1\n")
	alice, bob := connectAs(t, iso.url, "alice-secret"), connectAs(t, iso.url, "bob-secret")
	pid, _ := state(t, alice, "remember", "mine")
	res := callTool(t, bob, "state__recall", map[string]any{})
	if text := testkit.Text(res); !res.IsError || !strings.Contains(text, "isolation_max") {
		t.Errorf("bob's call beyond the cap: %q, want an error naming isolation_max", text)
	}
	if n := len(marked(iso.mark)); n != 2 {
		t.Errorf("%d stateserver processes, want 2: the cap started no third", n)
	}
	if again, got := state(t, alice, "recall", ""); again != pid || got != "mine" {
		t.Errorf("alice after bob's refusal: pid %s value %q, want %s %q", again, got, pid, "mine")
	}
}

func TestIsolatedChildrenDieWithMcpwarden(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			iso := startIsolated(t, "per_principal", "")
			state(t, connectAs(t, iso.url, "alice-secret"), "recall", "")
			state(t, connectAs(t, iso.url, "bob-secret"), "recall", "")
			if n := len(marked(iso.mark)); n != 3 {
				t.Fatalf("%d stateserver processes, want 3", n)
			}
			if err := signalPID(iso.f.pid, sig); err != nil {
				t.Fatal(err)
			}
			waitNoneMarked(t, iso.mark, 10*time.Second, "after "+sig.String()+" to mcpwarden")
		})
	}
}
