package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/testkit"
)

// Requests other than tools/call, end to end: two server-everything
// instances, "everything" and "hidden", offer the same resources, so each
// is exposed with its server's prefix ("hidden+demo://…").

const (
	dynamicText  = "demo://resource/dynamic/text/1"
	simplePrompt = "simple-prompt"
)

// catalogFixture fronts everything and hidden; hidden is denied outright.
func catalogFixture(t *testing.T, listen string) *fixture {
	return newFixture(t, listen, "  everything:\n"+serverEverything()+"\n  hidden:\n"+serverEverything(), `  default: deny
  deny: ["mcp:hidden:*"]
  allow: ["mcp:everything:*"]`)
}

// requestEvent is the part of an audit line these tests check.
type requestEvent struct {
	Event     string `json:"event"`
	Method    string `json:"method"`
	Tool      string `json:"tool"`
	Server    string `json:"server"`
	Decision  string `json:"decision"`
	Rule      string `json:"rule"`
	Principal string `json:"principal"`
	Profile   string `json:"profile"`
}

// count returns how many events of kind there are for a canonical request
// with decision ("" for any).
func count(events []requestEvent, kind, canonical, decision string) int {
	n := 0
	for _, e := range events {
		if e.Event == kind && e.Tool == canonical && (decision == "" || e.Decision == decision) {
			n++
		}
	}
	return n
}

func catalogNames(t *testing.T, c *client.Client) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var names []string
	resources, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resources.Resources {
		names = append(names, r.URI)
	}
	templates, err := c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tmpl := range templates.ResourceTemplates {
		names = append(names, tmpl.URITemplate.Raw())
	}
	prompts, err := c.ListPrompts(ctx, mcp.ListPromptsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range prompts.Prompts {
		names = append(names, p.Name)
	}
	return names
}

func ofServer(names []string, server string) []string {
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, server+"+") || strings.HasPrefix(n, server+"__") {
			out = append(out, n)
		}
	}
	return out
}

func readResource(t *testing.T, c *client.Client, uri string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	res, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: uri}})
	if err == nil && len(res.Contents) == 0 {
		t.Errorf("read %s returned no contents", uri)
	}
	return err
}

func getPrompt(t *testing.T, c *client.Client, name string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err := c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: name}})
	return err
}

// checkDeniedServer runs the denied-server scenario on a connected client.
func checkDeniedServer(t *testing.T, f *fixture, c *client.Client) {
	names := catalogNames(t, c)
	if got := ofServer(names, "hidden"); len(got) != 0 {
		t.Errorf("the denied server's catalog is listed: %q", got)
	}
	if !slices.Contains(names, "everything__"+simplePrompt) || len(ofServer(names, "everything")) < 3 {
		t.Errorf("the allowed server's catalog is not listed: %q", names)
	}
	for _, uri := range []string{"hidden+" + dynamicText, "hidden+demo://resource/static/document/architecture.md"} {
		if err := readResource(t, c, uri); err == nil || !strings.Contains(err.Error(), "mcp:hidden:*") {
			t.Errorf("read %s = %v, want a refusal naming the rule", uri, err)
		}
	}
	if err := getPrompt(t, c, "hidden__"+simplePrompt); err == nil {
		t.Error("the denied server's prompt was served")
	}
	if err := readResource(t, c, "everything+"+dynamicText); err != nil {
		t.Errorf("read of the allowed server: %v", err)
	}
	if err := getPrompt(t, c, "everything__"+simplePrompt); err != nil {
		t.Errorf("prompt of the allowed server: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	done, err := c.Complete(ctx, mcp.CompleteRequest{Params: mcp.CompleteParams{
		Ref:      mcp.PromptReference{Type: "ref/prompt", Name: "everything__completable-prompt"},
		Argument: mcp.CompleteArgument{Name: "department", Value: "E"},
	}})
	if err != nil || !slices.Contains(done.Completion.Values, "Engineering") {
		t.Errorf("completion through the proxy = %+v, %v", done, err)
	}

	events := auditLines[requestEvent](t, f.auditPath)
	tests := []struct {
		canonical, kind, decision string
		want                      int
	}{
		{"mcp:hidden:resources/read", "decision", "deny", 2},
		{"mcp:hidden:resources/read", "result", "", 0},
		{"mcp:hidden:prompts/get", "decision", "deny", 1},
		{"mcp:hidden:prompts/get", "result", "", 0},
		{"mcp:everything:resources/read", "decision", "allow", 1},
		{"mcp:everything:resources/read", "result", "", 1},
		{"mcp:everything:prompts/get", "decision", "allow", 1},
		{"mcp:everything:prompts/get", "result", "", 1},
		{"mcp:everything:completion/complete", "decision", "allow", 1},
		{"mcp:everything:completion/complete", "result", "", 1},
	}
	for _, tt := range tests {
		if got := count(events, tt.kind, tt.canonical, tt.decision); got != tt.want {
			t.Errorf("audit: %d %s events of %s (decision %q), want %d", got, tt.kind, tt.canonical, tt.decision, tt.want)
		}
	}
	for _, e := range events {
		if (e.Event == "decision" || e.Event == "result") && strings.Contains(e.Tool, "/") && e.Method != e.Tool[strings.LastIndex(e.Tool, ":")+1:] {
			t.Errorf("audit event %+v does not carry its method", e)
		}
	}
}

func TestDeniedServerIsUnlistedAndUnreadableOverStdio(t *testing.T) {
	t.Parallel()
	f := catalogFixture(t, "")
	c := connectStdio(t, f, client.WithLegacyProtocolOnly())
	checkDeniedServer(t, f, c)
	// A client before 2026-07-28 subscribes with resources/subscribe,
	// which is decided too.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := c.Subscribe(ctx, mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: "hidden+" + dynamicText}}); err == nil {
		t.Error("subscribing to the denied server's resource was accepted")
	}
	if err := c.Subscribe(ctx, mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: "everything+" + dynamicText}}); err != nil {
		t.Errorf("subscribing to the allowed server's resource: %v", err)
	}
	events := auditLines[requestEvent](t, f.auditPath)
	if count(events, "decision", "mcp:hidden:resources/subscribe", "deny") != 1 || count(events, "result", "mcp:everything:resources/subscribe", "") != 1 {
		t.Errorf("subscriptions are not audited as decided: %+v", events)
	}
}

func TestDeniedServerIsUnlistedAndUnreadableOverHTTP(t *testing.T) {
	t.Parallel()
	f := catalogFixture(t, testkit.FreeAddr(t))
	url, _ := startHTTP(t, f)
	c := connectHTTP(t, url)
	checkDeniedServer(t, f, c)
}

func TestTwoTokensSeeAndReadOnlyTheirServers(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testkit.FreeAddr(t), "  everything:\n"+serverEverything()+"\n  hidden:\n"+serverEverything(), `  default: deny
  allow: ["mcp:*:*"]`)
	f.appendConfig(t, `profiles:
  a:
    servers: [everything]
    tokens_env: [A_TOKEN]
  b:
    servers: [hidden]
    tokens_env: [B_TOKEN]
`)
	url, _ := startHTTP(t, f, "A_TOKEN=a-secret", "B_TOKEN=b-secret")
	a := connectHTTPWithToken(t, url, "a-secret")
	b := connectHTTPWithToken(t, url, "b-secret")
	for _, tt := range []struct {
		name        string
		c           *client.Client
		own, theirs string
	}{{"a", a, "everything", "hidden"}, {"b", b, "hidden", "everything"}} {
		names := catalogNames(t, tt.c)
		if len(ofServer(names, tt.theirs)) != 0 || len(ofServer(names, tt.own)) == 0 {
			t.Errorf("%s sees %q, want only %s's catalog", tt.name, names, tt.own)
		}
		if err := readResource(t, tt.c, tt.own+"+"+dynamicText); err != nil {
			t.Errorf("%s reading its own server: %v", tt.name, err)
		}
		if err := readResource(t, tt.c, tt.theirs+"+"+dynamicText); err == nil {
			t.Errorf("%s read the other profile's server", tt.name)
		}
	}
	events := auditLines[requestEvent](t, f.auditPath)
	principals := map[string]string{}
	for _, e := range events {
		if e.Event != "decision" || e.Method != "resources/read" {
			continue
		}
		if prev, ok := principals[e.Profile]; ok && prev != e.Principal {
			t.Errorf("profile %s's reads carry principals %q and %q", e.Profile, prev, e.Principal)
		}
		principals[e.Profile] = e.Principal
		own := map[string]string{"a": "everything", "b": "hidden"}[e.Profile]
		if want := map[bool]string{true: "allow", false: "deny"}[e.Server == own]; e.Decision != want {
			t.Errorf("profile %s reading %s was decided %s, want %s", e.Profile, e.Server, e.Decision, want)
		}
	}
	if len(principals) != 2 || principals["a"] == principals["b"] || !strings.HasPrefix(principals["a"], "token:") {
		t.Errorf("principals by profile = %v, want two distinct token principals", principals)
	}
}

// TestFilesystemRootsAreAnsweredWithTheWorkspace: server-filesystem asks
// the client side for roots when it starts; mcpwarden answers with the
// workspace, which then is what the server allows.
func TestFilesystemRootsAreAnsweredWithTheWorkspace(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "", "  fs:\n"+serverFilesystem("SANDBOX"), `  default: deny
  workspace: ["SANDBOX/work"]
  allow: ["mcp:fs:list_allowed_directories"]`)
	work := filepath.Join(f.sandbox, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	stderr := &testkit.LockedBuffer{}
	c := connectStdioWithStderr(t, f, stderr, client.WithLegacyProtocolOnly())
	var got string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		got = testkit.Text(callTool(t, c, "fs__list_allowed_directories", nil))
		if strings.Contains(got, work) {
			break
		}
	}
	if !strings.Contains(got, work) {
		t.Errorf("server-filesystem allows %q, want the workspace %s given as its roots", got, work)
	}
	if strings.Contains(stderr.String(), "Failed to request initial roots") {
		t.Errorf("server-filesystem's roots request was refused:\n%s", stderr.String())
	}
}

// TestFilesystemWithoutWorkspaceKeepsItsDirectories is the next variant:
// without a workspace the answer is empty, and the server keeps the
// directory it was started with rather than being widened.
func TestFilesystemWithoutWorkspaceKeepsItsDirectories(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "", "  fs:\n"+serverFilesystem("SANDBOX"), `  default: deny
  allow: ["mcp:fs:list_allowed_directories"]`)
	c := connectStdio(t, f, client.WithLegacyProtocolOnly())
	time.Sleep(time.Second) // the roots exchange at start
	got := testkit.Text(callTool(t, c, "fs__list_allowed_directories", nil))
	if !strings.Contains(got, f.sandbox) {
		t.Errorf("server-filesystem allows %q, want its own %s", got, f.sandbox)
	}
	wd, _ := os.Getwd()
	if strings.Contains(got, wd) {
		t.Errorf("server-filesystem was widened to the working directory: %q", got)
	}
}

// TestSessionOpenedWithOneTokenRefusesAnother: a session ID taken from one
// token's client is refused to another token, end to end.
func TestSessionOpenedWithOneTokenRefusesAnother(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testkit.FreeAddr(t), "  everything:\n"+serverEverything(), `  default: deny
  allow: ["mcp:everything:echo"]`)
	f.appendConfig(t, `profiles:
  a:
    tokens_env: [A_TOKEN]
  b:
    tokens_env: [B_TOKEN]
`)
	url, _ := startHTTP(t, f, "A_TOKEN=a-secret", "B_TOKEN=b-secret")
	resp, _ := rawRequest(t, "POST", url, map[string]string{"Authorization": "Bearer a-secret"}, initializeBody)
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || id == "" {
		t.Fatalf("initialize as a: %d, session %q", resp.StatusCode, id)
	}
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	for _, tt := range []struct {
		token string
		want  int
	}{{"b-secret", 403}, {"a-secret", 200}} {
		resp, body := rawRequest(t, "POST", url, map[string]string{"Authorization": "Bearer " + tt.token, "Mcp-Session-Id": id, "MCP-Protocol-Version": "2025-11-25"}, ping)
		if resp.StatusCode != tt.want {
			t.Errorf("ping on a's session with %s: %d %s, want %d", tt.token, resp.StatusCode, body, tt.want)
		}
	}
	var refused bool
	for _, e := range auditLines[requestEvent](t, f.auditPath) {
		refused = refused || e.Event == "decision" && e.Rule == "builtin:session-owner" && e.Profile == "b"
	}
	if !refused {
		t.Error("the refused request on another principal's session is not audited")
	}
}
