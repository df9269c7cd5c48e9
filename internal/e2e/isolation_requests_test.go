package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// valueURI is stateserver's resource holding the remembered value.
const valueURI = "state://value"

// A listener is a client that keeps what it is sent outside its own
// requests' results: notifications and sampling requests.
type listener struct {
	c *client.Client

	mu            sync.Mutex
	notifications []mcp.JSONRPCNotification
	sampled       []string // the text of each sampling request
}

// listen connects to url with token, with a standing stream for what the
// server sends outside a request, answering sampling with answer.
func listen(t *testing.T, url, token, answer string) *listener {
	t.Helper()
	l := &listener{}
	tr, err := transport.NewStreamableHTTP(url,
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}),
		transport.WithContinuousListening())
	if err != nil {
		t.Fatal(err)
	}
	l.c = client.NewClient(tr, client.WithLegacyProtocolOnly(), client.WithSamplingHandler(samplingAnswer(func(text string) string {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.sampled = append(l.sampled, text)
		return answer
	})))
	l.c.OnNotification(func(n mcp.JSONRPCNotification) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.notifications = append(l.notifications, n)
	})
	t.Cleanup(func() { l.c.Close() })
	initialize(t, l.c)
	return l
}

// samplingAnswer answers a sampling request with what it returns for the
// request's text.
type samplingAnswer func(text string) string

func (f samplingAnswer) CreateMessage(_ context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	text := ""
	if len(req.Messages) > 0 {
		if tc, ok := req.Messages[0].Content.(mcp.TextContent); ok {
			text = tc.Text
		}
	}
	return &mcp.CreateMessageResult{SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent(f(text))}, Model: "test"}, nil
}

// seen returns the notifications of method received so far, as text.
func (l *listener) seen(method string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, n := range l.notifications {
		if n.Method == method {
			out = append(out, fmt.Sprint(n.Params.AdditionalFields))
		}
	}
	return out
}

// samplings returns the sampling requests received so far.
func (l *listener) samplings() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.sampled...)
}

// readValue reads state://value as c and returns what the child that
// served it reported.
func readValue(t *testing.T, c *client.Client) (pid, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	res, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: valueURI}})
	if err != nil {
		t.Fatalf("reading %s: %v", valueURI, err)
	}
	if len(res.Contents) != 1 {
		t.Fatalf("reading %s: %d contents", valueURI, len(res.Contents))
	}
	tc, _ := res.Contents[0].(mcp.TextResourceContents)
	return parseState(t, tc.Text)
}

// parseState splits stateserver's "pid=<pid> value=<value>".
func parseState(t *testing.T, text string) (pid, value string) {
	t.Helper()
	m := statePattern.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("stateserver answered %q", text)
	}
	return m[1], m[2]
}

// TestPerPrincipalRequestsGoToOwnChild: alice's child holds her secret;
// every kind of request bob can make of the server — resources/read,
// prompts/get, completion/complete — is served by his own child, never by
// hers nor by a shared process, and hers by hers.
func TestPerPrincipalRequestsGoToOwnChild(t *testing.T) {
	t.Parallel()
	iso := startIsolated(t, "per_principal", "")
	alice, bob := connectAs(t, iso.url, "alice-secret"), connectAs(t, iso.url, "bob-secret")
	alicePID, _ := state(t, alice, "remember", "alice's secret")
	bobPID, _ := state(t, bob, "recall", "")
	if alicePID == bobPID {
		t.Fatalf("alice and bob share child %s", alicePID)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	kinds := map[string]func(c *client.Client) string{
		"resources/read": func(c *client.Client) string {
			pid, value := readValue(t, c)
			return "pid=" + pid + " value=" + value
		},
		"prompts/get": func(c *client.Client) string {
			res, err := c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "state__recall"}})
			if err != nil || len(res.Messages) != 1 {
				t.Fatalf("prompts/get: %v, %v", res, err)
			}
			return testkit.Text(&mcp.CallToolResult{Content: []mcp.Content{res.Messages[0].Content}})
		},
		"completion/complete": func(c *client.Client) string {
			res, err := c.Complete(ctx, mcp.CompleteRequest{Params: mcp.CompleteParams{
				Ref:      mcp.PromptReference{Type: "ref/prompt", Name: "state__recall"},
				Argument: mcp.CompleteArgument{Name: "x", Value: ""},
			}})
			if err != nil || len(res.Completion.Values) != 1 {
				t.Fatalf("completion/complete: %v, %v", res, err)
			}
			return res.Completion.Values[0]
		},
	}
	for kind, ask := range kinds {
		if pid, value := parseState(t, ask(bob)); pid != bobPID || value != "" {
			t.Errorf("bob's %s was served by pid %s holding %q, want his own child %s, empty", kind, pid, value, bobPID)
		}
		if pid, value := parseState(t, ask(alice)); pid != alicePID || value != "alice's secret" {
			t.Errorf("alice's %s was served by pid %s holding %q, want her child %s", kind, pid, value, alicePID)
		}
	}
	if n := len(marked(iso.mark)); n != 3 {
		t.Errorf("%d stateserver processes, want 3: the template and one child per principal", n)
	}
	byPrincipal := instances(t, iso.f.auditPath)
	for principal, names := range byPrincipal {
		for _, name := range names {
			if !strings.HasPrefix(name, "principal:"+principal+"#") {
				t.Errorf("a result of %s names instance %q", principal, name)
			}
		}
	}
}

// TestPerPrincipalSetLevelGoesToOwnChild: the log level alice sets is set
// on her child, not on a shared process nor on bob's.
func TestPerPrincipalSetLevelGoesToOwnChild(t *testing.T) {
	t.Parallel()
	iso := startIsolated(t, "per_principal", "")
	alice, bob := connectAs(t, iso.url, "alice-secret"), connectAs(t, iso.url, "bob-secret")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := alice.SetLevel(ctx, mcp.SetLevelRequest{Params: mcp.SetLevelParams{Level: mcp.LoggingLevelDebug}}); err != nil {
		t.Fatal(err)
	}
	if got := testkit.Text(callTool(t, alice, "state__level", nil)); !strings.HasSuffix(got, " level=debug") {
		t.Errorf("alice's child says %q, want the level she set", got)
	}
	if got := testkit.Text(callTool(t, bob, "state__level", nil)); strings.HasSuffix(got, " level=debug") {
		t.Errorf("bob's child says %q: alice's level reached it", got)
	}
}

// TestPerPrincipalSubscriptionUpdatesReachOnlyItsPrincipal: alice's
// subscription is made on her child, whose updates reach her and not bob,
// who may read the same resource.
func TestPerPrincipalSubscriptionUpdatesReachOnlyItsPrincipal(t *testing.T) {
	t.Parallel()
	iso := startIsolated(t, "per_principal", "")
	alice, bob := listen(t, iso.url, "alice-secret", "alice"), listen(t, iso.url, "bob-secret", "bob")
	state(t, bob.c, "recall", "") // bob's child is running
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := alice.c.Subscribe(ctx, mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: valueURI}}); err != nil {
		t.Fatal(err)
	}
	state(t, alice.c, "remember", "alice's secret")
	testkit.Eventually(t, 10*time.Second, "alice's update", func() bool {
		return len(alice.seen(mcp.MethodNotificationResourceUpdated)) == 1
	})
	state(t, bob.c, "remember", "bob's") // his child has no subscription
	time.Sleep(500 * time.Millisecond)
	if got := bob.seen(mcp.MethodNotificationResourceUpdated); len(got) != 0 {
		t.Errorf("bob got updates %q of alice's child", got)
	}
	if got := alice.seen(mcp.MethodNotificationResourceUpdated); len(got) != 1 {
		t.Errorf("alice got updates %q, want the one of her remember", got)
	}
}

// TestPerPrincipalChildRequestReachesOnlyItsSession: alice's child asks
// for sampling outside any call while bob's call to the same server is in
// flight. It goes to alice, never to bob, whose call alone is in flight.
func TestPerPrincipalChildRequestReachesOnlyItsSession(t *testing.T) {
	t.Parallel()
	iso := startIsolated(t, "per_principal", "")
	alice, bob := listen(t, iso.url, "alice-secret", "alice's answer"), listen(t, iso.url, "bob-secret", "bob's answer")
	bobCalling := bobWaits(t, bob.c, nil)
	state(t, alice.c, "later", "") // asks 300ms after it returned
	testkit.Eventually(t, 15*time.Second, "alice's sampling request", func() bool { return len(alice.samplings()) > 0 })
	if got := bob.samplings(); len(got) != 0 {
		t.Errorf("bob was asked %q by alice's child", got)
	}
	if got := testkit.Text(callTool(t, alice.c, "state__sampled", nil)); !strings.HasSuffix(got, "sampled=alice's answer") {
		t.Errorf("alice's child got %q", got)
	}
	for principal, names := range instances(t, iso.f.auditPath) { // the sampling's result too
		for _, name := range names {
			if !strings.HasPrefix(name, "principal:"+principal+"#") {
				t.Errorf("a result of %s names instance %q, want the child that served or asked", principal, name)
			}
		}
	}
	bobCalling()
}

// TestIsolatedChildCannotSendProgressToAnotherPrincipalsCall: mcpwarden's
// progress tokens are numbered; alice's child sends progress for every
// token while bob's call, which asked for progress, is in flight. None of
// it reaches bob.
func TestIsolatedChildCannotSendProgressToAnotherPrincipalsCall(t *testing.T) {
	t.Parallel()
	iso := startIsolated(t, "per_principal", "")
	alice, bob := listen(t, iso.url, "alice-secret", ""), listen(t, iso.url, "bob-secret", "")
	bobCalling := bobWaits(t, bob.c, &mcp.Meta{ProgressToken: "bob's"})
	state(t, alice.c, "spoof", "")
	time.Sleep(500 * time.Millisecond)
	for _, p := range bob.seen(string(mcp.MethodNotificationProgress)) {
		if strings.Contains(p, "spoofed") {
			t.Errorf("bob's call got alice's child's progress %s", p)
		}
	}
	bobCalling()
}

// bobWaits starts a call of state__wait, as the client bob, that lasts until the returned
// function is called, and returns once it has reached bob's child.
func bobWaits(t *testing.T, bob *client.Client, meta *mcp.Meta) (end func()) {
	t.Helper()
	state(t, bob, "recall", "") // his child is running
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = bob.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "state__wait", Arguments: map[string]any{"ms": 60000}, Meta: meta}})
	}()
	time.Sleep(500 * time.Millisecond) // in flight: nothing else is sent to his child
	return func() {
		cancel()
		<-done
	}
}

// TestPerSessionChildEndsWithItsSession: a per_session child stops when
// its session ends, by the client's DELETE or by the session idle
// timeout, long before the isolation idle timeout, and says so in the log.
func TestPerSessionChildEndsWithItsSession(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		extra string
		end   func(t *testing.T, url string, c *client.Client)
	}{
		{"the client ends it", "", deleteSession},
		{"it is idle", "http:\n  session_idle_timeout: 1s\n", func(*testing.T, string, *client.Client) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, mark := isolatedFixture(t, "per_session", "")
			f.appendConfig(t, "profiles:\n  alice:\n    servers: [state]\n    tokens_env: [ALICE_TOKEN]\n"+tt.extra)
			url, stderr := startHTTP(t, f, "ALICE_TOKEN=alice-secret")
			ended, kept := connectAs(t, url, "alice-secret"), connectAs(t, url, "alice-secret")
			endedPID, _ := state(t, ended, "remember", "x")
			keptPID, _ := state(t, kept, "remember", "y")
			if n := len(marked(mark)); n != 3 {
				t.Fatalf("%d stateserver processes, want 3: the template and one child per session", n)
			}
			tt.end(t, url, ended)
			stop := make(chan struct{})
			defer close(stop)
			go func() { // the kept session stays busy
				for {
					select {
					case <-stop:
						return
					case <-time.After(200 * time.Millisecond):
						_, _ = kept.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "state__recall"}})
					}
				}
			}()
			testkit.Eventually(t, 15*time.Second, "the ended session's child to stop", func() bool { return !runs(mark, endedPID) })
			if !runs(mark, keptPID) {
				t.Errorf("the other session's child %s stopped too", keptPID)
			}
			testkit.Eventually(t, 5*time.Second, "the log to say why", func() bool {
				return strings.Contains(stderr.String(), "isolated upstream child stopped: its session ended")
			})
		})
	}
}

// deleteSession ends alice's session c with a DELETE, as a client does
// (mcp-go's Close sends one without the Authorization header, which
// mcpwarden refuses).
func deleteSession(t *testing.T, url string, c *client.Client) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodDelete, url, http.NoBody)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer alice-secret")
	req.Header.Set("Mcp-Session-Id", c.GetSessionId())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		t.Fatalf("DELETE of the session: %s", resp.Status)
	}
}

// runs reports whether the process with the decimal id pid, carrying
// mark, runs.
func runs(mark, pid string) bool {
	return slices.ContainsFunc(marked(mark), func(p int) bool { return strconv.Itoa(p) == pid })
}

// TestPerSessionChildEndsWhenStdioClientGoes: over stdio the one session
// ends with the client; its child does not outlive it.
func TestPerSessionChildEndsWhenStdioClientGoes(t *testing.T) {
	t.Parallel()
	mark := fmt.Sprintf("isolation-%s-%d", t.Name(), time.Now().UnixNano())
	t.Cleanup(func() { killMarked(mark) })
	// Tier landlock: the child is known by its PID, 1 in every PID
	// namespace of tier namespaces.
	f := newFixture(t, "stdio", fmt.Sprintf("  state:\n    command: %q\n    env: { %s: %q }\n    isolation: per_session\n    sandbox: { tier: landlock }\n",
		stateServer.binary(t), markEnv, mark), `  allow: ["mcp:state:*"]`)
	c := connectStdio(t, f)
	pid, _ := state(t, c, "remember", "x")
	if !runs(mark, pid) || len(marked(mark)) != 2 {
		t.Fatalf("processes %v, want the template and the session's child %s", marked(mark), pid)
	}
	c.Close() // the client goes: its stdin closes
	waitNoneMarked(t, mark, 15*time.Second, "after the stdio client went")
}

// TestPerSessionChildRequestReachesOnlyItsSession is the variant within
// one principal: the child of alice's first session asks for sampling
// while only her second session has a call in flight. It goes to the
// first session, whose child asked.
func TestPerSessionChildRequestReachesOnlyItsSession(t *testing.T) {
	t.Parallel()
	iso := startIsolated(t, "per_session", "")
	first, second := listen(t, iso.url, "alice-secret", "first's answer"), listen(t, iso.url, "alice-secret", "second's answer")
	secondCalling := bobWaits(t, second.c, nil)
	state(t, first.c, "later", "")
	testkit.Eventually(t, 15*time.Second, "the first session's sampling request", func() bool { return len(first.samplings()) > 0 })
	if got := second.samplings(); len(got) != 0 {
		t.Errorf("the second session was asked %q by the first session's child", got)
	}
	if got := testkit.Text(callTool(t, first.c, "state__sampled", nil)); !strings.HasSuffix(got, "sampled=first's answer") {
		t.Errorf("the first session's child got %q", got)
	}
	secondCalling()
}
