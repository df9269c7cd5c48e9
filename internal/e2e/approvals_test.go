package e2e

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

var updateScreenshot = flag.Bool("update-screenshot", false, "write the approvals page screenshot to docs/approvals.png")

// chromium is Debian's Chromium, which .ci/setup installs.
const chromium = "/usr/bin/chromium"

// approvalsFixture puts write_file under an ask rule, with the approvals
// page on a free loopback port.
func approvalsFixture(t *testing.T, timeout string) *fixture {
	t.Helper()
	f := newFixture(t, "stdio", "  fs:\n"+serverFilesystem("SANDBOX"), `  default: deny
  ask: ["mcp:fs:write_file"]
  allow: ["mcp:fs:list_allowed_directories"]`)
	f.appendConfig(t, fmt.Sprintf("ask:\n  timeout: %s\n  approvals: local\n  approvals_listen: %q\n", timeout, testkit.FreeAddr(t)))
	return f
}

// pageToken is the running instance's token file, in mcpwarden's private
// state directory.
type pageToken struct {
	URL   string `json:"url"`
	Token string `json:"token"`
}

func readPageToken(t *testing.T, f *fixture) pageToken {
	t.Helper()
	path := tokenPath(t, f)
	info, err := os.Stat(path)
	if err != nil {
		t.Fatalf("token file: %v", err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Errorf("token file mode %#o, want 0600", perm)
	}
	if dir, err := os.Stat(filepath.Dir(path)); err != nil || dir.Mode().Perm() != 0o700 {
		t.Errorf("token directory %s: %v, want mode 0700", filepath.Dir(path), err)
	}
	if strings.HasPrefix(path, f.dir) {
		t.Errorf("token file %s is next to the config, where servers may reach it", path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var tok pageToken
	if err := json.Unmarshal(data, &tok); err != nil || tok.URL == "" || tok.Token == "" {
		t.Fatalf("token file %q: %v", data, err)
	}
	return tok
}

// progressLog keeps the progress messages the client received.
type progressLog struct {
	mu   sync.Mutex
	msgs []string
}

func (p *progressLog) watch(c *client.Client) {
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method != string(mcp.MethodNotificationProgress) {
			return
		}
		msg, _ := n.Params.AdditionalFields["message"].(string)
		p.mu.Lock()
		p.msgs = append(p.msgs, msg)
		p.mu.Unlock()
	})
}

func (p *progressLog) all() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.msgs...)
}

// callAsync makes a tools/call with a progress token and returns its result
// when it comes.
func callAsync(t *testing.T, c *client.Client, args map[string]any) <-chan *mcp.CallToolResult {
	t.Helper()
	ch := make(chan *mcp.CallToolResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{
			Name: "fs__write_file", Arguments: args, Meta: &mcp.Meta{ProgressToken: "progress-1"},
		}})
		if err != nil {
			res = mcp.NewToolResultError("call failed: " + err.Error())
		}
		ch <- res
	}()
	return ch
}

func result(t *testing.T, ch <-chan *mcp.CallToolResult) *mcp.CallToolResult {
	t.Helper()
	select {
	case res := <-ch:
		return res
	case <-time.After(30 * time.Second):
		t.Fatal("the call did not return")
		return nil
	}
}

// newBrowser starts a headless Chromium with a fresh profile. The flags
// keep it off the network, which this machine does not have.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is missing: .ci/setup should have installed it", chromium)
		}
		t.Skipf("%s is missing (.ci/setup installs it when run as root)", chromium)
	}
	actx, cancel := chromedp.NewExecAllocator(t.Context(),
		chromedp.ExecPath(chromium),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1100, 820),
	)
	t.Cleanup(cancel)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", chromium, err)
	}
	return ctx
}

// within runs steps in the browser, bounded by d.
func within(t *testing.T, ctx context.Context, d time.Duration, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("browser: %v", err)
	}
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluating %s: %v", js, err)
	}
	return v
}

// onlyNewAsk holds when the page shows one ask, with its buttons enabled:
// the card of the ask before it, decided, is gone. Until the page has
// been told so, that card (its buttons disabled by the click) is still
// first in the list, and a click meant for the new ask would land on it.
const onlyNewAsk = `document.querySelectorAll("li.ask").length === 1 && !document.querySelector("li.ask button.deny").disabled`

func TestApprovalPageInBrowser(t *testing.T) {
	t.Parallel()
	browser := newBrowser(t)
	f := approvalsFixture(t, "20s")
	c := connectStdio(t, f, client.WithLegacyProtocolOnly()) // no elicitation handler
	progress := &progressLog{}
	progress.watch(c)
	tok := readPageToken(t, f)
	within(t, browser, 10*time.Second,
		chromedp.Navigate(tok.URL+"?token="+tok.Token),
		chromedp.Poll[chromedp.Void](`document.getElementById("status").textContent === "live"`),
	)

	target := filepath.Join(f.sandbox, "approved.txt")
	hostile := `<script>window.pwned = 1</script><img src=x onerror=window.pwned=2>` // no quotes: JSON would escape them
	// A value too long for a form is shown whole on the page.
	long := hostile + strings.Repeat(" long", 2000) + " END-OF-LONG-VALUE"
	args := map[string]any{"path": target, "content": long}

	// 1. Allow once forwards exactly that call.
	awaitListed(t, c, "fs__write_file")
	start := time.Now()
	first := callAsync(t, c, args)
	within(t, browser, 5*time.Second, chromedp.WaitVisible(chromedp.CSS("li.ask button.allow_once")))
	// The page is pushed the ask (no reload, no polling); how fast is a
	// figure, not a test, but seconds would mean it is not being pushed.
	d := time.Since(start)
	t.Logf("the pending ask showed on the page after %v", d)
	if d > 3*time.Second {
		t.Errorf("the pending ask took %v to show on the page, want about a second at most", d)
	}
	shown := eval[string](t, browser, `document.querySelector("li.ask pre.args").textContent`)
	if !strings.Contains(shown, hostile) || !strings.Contains(shown, target) || !strings.Contains(shown, "END-OF-LONG-VALUE") {
		t.Errorf("arguments shown = %q, want the arguments as text, in full", shown)
	}
	for _, js := range []string{
		`document.querySelectorAll("li.ask script, li.ask img").length === 0`,
		`window.pwned === undefined`,
		`document.querySelector("li.ask .tool").textContent === "mcp:fs:write_file"`,
		`document.querySelector("li.ask").textContent.includes("e2e-test 1.0")`,
		`document.querySelector("li.ask").textContent.includes("mcp:fs:write_file  (in policy)")`,
		`document.querySelector("li.ask").textContent.includes("Principallocal")`,
		fmt.Sprintf(`document.querySelector("li.ask button.allow_session_folder").textContent.includes(%q)`, f.sandbox),
	} {
		if !eval[bool](t, browser, js) {
			t.Errorf("in the page, %s is false", js)
		}
	}
	within(t, browser, 5*time.Second, chromedp.Click(chromedp.CSS("li.ask button.allow_once")))
	if res := result(t, first); res.IsError || !exists(target) {
		t.Fatalf("allowed once: %q, written %v", testkit.Text(res), exists(target))
	}
	if err := os.Remove(target); err != nil {
		t.Fatal(err)
	}

	// 2. The same call again asks again; allow it for the session.
	args = map[string]any{"path": target, "content": hostile} // the session grant is for the path
	second := callAsync(t, c, args)
	within(t, browser, 5*time.Second,
		chromedp.WaitVisible(chromedp.CSS("li.ask button.allow_session")),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll("#recent tbody tr").length === 1`),
		chromedp.Poll[chromedp.Void](onlyNewAsk),
	)
	time.Sleep(1600 * time.Millisecond) // "Waiting" counts up live
	if waited := eval[string](t, browser, `document.querySelector("li.ask .waited").textContent`); waited == "0 s" {
		t.Errorf("after 1.6 s the page shows the ask waiting %q", waited)
	}
	png, err := chromedp.Run(browser, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "approvals.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	if *updateScreenshot {
		docs := filepath.Join(repoRoot, "docs")
		if err := os.MkdirAll(docs, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(docs, "approvals.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	within(t, browser, 5*time.Second, chromedp.Click(chromedp.CSS("li.ask button.allow_session")))
	if res := result(t, second); res.IsError || !exists(target) {
		t.Fatalf("allowed for the session: %q, written %v", testkit.Text(res), exists(target))
	}

	// 3. The session grant lets the next one through without asking.
	if err := os.Remove(target); err != nil {
		t.Fatal(err)
	}
	third := callAsync(t, c, args)
	select {
	case res := <-third:
		if res.IsError || !exists(target) {
			t.Errorf("under the session grant: %q, written %v", testkit.Text(res), exists(target))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a call under the session grant was held for approval")
	}

	// 4. Deny returns the deny text; another path is not under the grant.
	other := filepath.Join(f.sandbox, "denied.txt")
	fourth := callAsync(t, c, map[string]any{"path": other, "content": "no"})
	within(t, browser, 5*time.Second, chromedp.WaitVisible(chromedp.CSS("li.ask button.deny")), chromedp.Poll[chromedp.Void](onlyNewAsk))
	within(t, browser, 5*time.Second, chromedp.Click(chromedp.CSS("li.ask button.deny")))
	res := result(t, fourth)
	if !res.IsError || !strings.Contains(testkit.Text(res), "denied on the approvals page") || exists(other) {
		t.Errorf("denied: %q (isError %v), written %v", testkit.Text(res), res.IsError, exists(other))
	}

	within(t, browser, 5*time.Second,
		chromedp.Poll[chromedp.Void](`document.querySelectorAll("li.ask").length === 0 && document.querySelectorAll("#recent tbody tr").length === 3`),
	)
	recent := eval[string](t, browser, `document.querySelector("#recent tbody").textContent`)
	for _, want := range []string{"allow once", "allow session", "deny", "page — approvals page"} {
		if !strings.Contains(recent, want) {
			t.Errorf("recent decisions %q lack %q", recent, want)
		}
	}
	if got, want := grantedBy(t, f), []string{"ask/approval_page", "ask/approval_page", "ask/user_session", "ask/approval_page"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("audit decisions = %v, want %v", got, want)
	}

	msgs := progress.all()
	if len(msgs) < 3 {
		t.Errorf("progress messages = %q, want one per held call", msgs)
	}
	for _, m := range msgs {
		if !strings.Contains(m, "waiting for approval at "+tok.URL) || strings.Contains(m, tok.Token) {
			t.Errorf("progress message %q: want the page's address and no token", m)
		}
	}
}

func TestApprovalTimesOutAndRefusesForgedAnswers(t *testing.T) {
	t.Parallel()
	f := approvalsFixture(t, "3s")
	c := connectStdio(t, f, client.WithLegacyProtocolOnly())
	tok := readPageToken(t, f)
	target := filepath.Join(f.sandbox, "late.txt")
	awaitListed(t, c, "fs__write_file")
	start := time.Now()
	pending := callAsync(t, c, map[string]any{"path": target, "content": "x"})

	var id string
	for deadline := time.Now().Add(2 * time.Second); id == ""; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the ask is not listed")
		}
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, tok.URL+"api/asks", nil)
		req.Header.Set("Authorization", "Bearer "+tok.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var s struct{ Pending []struct{ ID string } }
		_ = json.NewDecoder(resp.Body).Decode(&s)
		resp.Body.Close()
		if len(s.Pending) == 1 {
			id = s.Pending[0].ID
		}
	}

	status := func(method, path, token string, header http.Header, body string) int {
		req, _ := http.NewRequestWithContext(t.Context(), method, tok.URL+path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	allow := `{"decision":"allow_once"}`
	jsonType := http.Header{"Content-Type": {"application/json"}}
	tests := []struct {
		name string
		got  int
		want int
	}{
		{"the page without its token", status(http.MethodGet, "", "", nil, ""), http.StatusForbidden},
		{"the page with a wrong token", status(http.MethodGet, "?token=AAAAAAAAAAAAAAAAAAAAAAAAAA", "", nil, ""), http.StatusForbidden},
		{"an answer without the token", status(http.MethodPost, "api/asks/"+id, "", jsonType, allow), http.StatusForbidden},
		{"a cross-origin answer", status(http.MethodPost, "api/asks/"+id, tok.Token, http.Header{"Content-Type": {"application/json"}, "Origin": {"http://attacker.example"}}, allow), http.StatusForbidden},
		{"a cross-site answer", status(http.MethodPost, "api/asks/"+id, tok.Token, http.Header{"Content-Type": {"application/json"}, "Sec-Fetch-Site": {"cross-site"}}, allow), http.StatusForbidden},
		{"a form post with the token in the URL", status(http.MethodPost, "api/asks/"+id+"?token="+tok.Token, "", http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, "decision=allow_once"), http.StatusForbidden},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: status %d, want %d", tt.name, tt.got, tt.want)
		}
	}

	res := result(t, pending)
	text := testkit.Text(res)
	if !res.IsError || !strings.Contains(text, "no answer came within 3s") || !strings.Contains(text, "Approvals are made at "+tok.URL) || strings.Contains(text, tok.Token) {
		t.Errorf("timed-out result = %q", text)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the timed-out ask took %v", d)
	}
	if exists(target) {
		t.Error("a timed-out ask was forwarded")
	}
	if got := grantedBy(t, f); len(got) != 1 || got[0] != "ask/timeout" {
		t.Errorf("audit decisions = %v, want [ask/timeout]", got)
	}
}

func TestApprovalByResolverCommand(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "stdio", "  fs:\n"+serverFilesystem("SANDBOX"), `  default: deny
  ask: ["mcp:fs:write_file"]`)
	// The resolver allows writes to ok.txt and denies the rest; it gets the
	// ask on stdin.
	script := filepath.Join(f.dir, "resolver.sh")
	body := "#!/bin/sh\nif grep -q 'ok.txt'; then echo '{\"decision\":\"allow_once\"}'; else echo '{\"decision\":\"deny\"}'; fi\n"
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	// elicitation: false sends even a client that can elicit to the resolver.
	f.appendConfig(t, fmt.Sprintf("ask:\n  timeout: 10s\n  elicitation: false\n  resolver:\n    command: [%q]\n    timeout: 5s\n", script))
	h := &human{answer: says("allow_once")}
	c := connectStdio(t, f, client.WithElicitationHandler(h))
	ok, no := filepath.Join(f.sandbox, "ok.txt"), filepath.Join(f.sandbox, "no.txt")
	if res := write(t, c, ok, "x"); res.IsError || !exists(ok) {
		t.Errorf("the resolver's allow: %q, written %v", testkit.Text(res), exists(ok))
	}
	if res := write(t, c, no, "x"); !res.IsError || exists(no) || !strings.Contains(testkit.Text(res), "denied by the external resolver") {
		t.Errorf("the resolver's deny: %q, written %v", testkit.Text(res), exists(no))
	}
	if h.times() != 0 {
		t.Errorf("with ask.elicitation false the client was asked %d times", h.times())
	}
	if got := grantedBy(t, f); strings.Join(got, " ") != "ask/resolver ask/resolver" {
		t.Errorf("audit decisions = %v, want two ask/resolver", got)
	}
}

// awaitListed waits until mcpwarden lists the tool wire: until then a call
// of it waits for its upstream to start, which on a loaded machine can
// outlast the seconds these tests give the ask to show up.
func awaitListed(t *testing.T, c *client.Client, wire string) {
	t.Helper()
	testkit.Eventually(t, 60*time.Second, wire+" listed", func() bool { return slices.Contains(listedNames(t, c), wire) })
}
