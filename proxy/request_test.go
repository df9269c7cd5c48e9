package proxy

import (
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/rules"
)

// denyHidden allows everything of fs and denies everything of hidden.
var denyHidden = rules.Spec{Global: rules.PolicySpec{Deny: []string{"mcp:hidden:*"}, Allow: []string{"mcp:fs:*"}}}

func TestDeniedServerResourceReadIsRefused(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, denyHidden, Options{})
	c := e.client(t)
	for _, uri := range []string{"hidden+file:///srv/app/.env", "hidden+file:///srv/readme"} {
		_, err := c.ReadResource(t.Context(), mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: uri}})
		if err == nil || !strings.Contains(err.Error(), `rule "mcp:hidden:*"`) {
			t.Errorf("resources/read %s = %v, want a refusal naming the rule", uri, err)
		}
	}
	if got := e.hid.count(mcp.MethodResourcesRead); got != 0 {
		t.Errorf("the denied server got %d resources/read requests, want none", got)
	}
	ds := decisionsOf(t, e.sink, "mcp:hidden:resources/read")
	if len(ds) != 2 {
		t.Fatalf("audit has %d decisions for mcp:hidden:resources/read, want 2: %+v", len(ds), ds)
	}
	for _, d := range ds {
		if d.Decision != "deny" || d.Method != "resources/read" || d.Rule != "mcp:hidden:*" || d.Arguments["uri"] == nil {
			t.Errorf("decision event = %+v, want a deny of resources/read by mcp:hidden:* with the uri", d)
		}
	}
	// The allowed server's read goes through and is audited with its result.
	res, err := c.ReadResource(t.Context(), mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "fs+file:///srv/app/.env"}})
	if err != nil || len(res.Contents) != 1 {
		t.Fatalf("allowed read = %v, %v", res, err)
	}
	if got := res.Contents[0].(mcp.TextResourceContents).URI; got != "fs+file:///srv/app/.env" {
		t.Errorf("contents carry URI %q, want the one the client asked for", got)
	}
	if got := e.fs.readURIs(); len(got) != 1 || got[0] != "file:///srv/app/.env" {
		t.Errorf("fs was asked to read %q, want the URI without the prefix", got)
	}
	var results int
	for _, ev := range e.sink.events(t) {
		if ev.Event.String() == "result" && ev.Tool == "mcp:fs:resources/read" && ev.Method == "resources/read" {
			results++
		}
	}
	if results != 1 {
		t.Errorf("audit has %d result events of the allowed read, want 1", results)
	}
}

// TestDeniedServerPromptsCompletionsAndSubscriptionsAreRefused is the next
// variant: every other request kind of a denied server.
func TestDeniedServerPromptsCompletionsAndSubscriptionsAreRefused(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, denyHidden, Options{})
	c := e.client(t)
	ctx := t.Context()
	_, before := e.hid.since(0)
	tests := []struct {
		name string
		do   func() error
	}{
		{"prompts/get", func() error {
			_, err := c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "hidden__greet", Arguments: map[string]string{"who": "x"}}})
			return err
		}},
		{"completion of a prompt", func() error {
			_, err := c.Complete(ctx, mcp.CompleteRequest{Params: mcp.CompleteParams{Ref: mcp.PromptReference{Type: "ref/prompt", Name: "hidden__greet"}, Argument: mcp.CompleteArgument{Name: "who", Value: "a"}}})
			return err
		}},
		{"completion of a template", func() error {
			_, err := c.Complete(ctx, mcp.CompleteRequest{Params: mcp.CompleteParams{Ref: mcp.ResourceReference{Type: "ref/resource", URI: "hidden+file:///{+path}"}, Argument: mcp.CompleteArgument{Name: "path", Value: "a"}}})
			return err
		}},
		{"subscribe", func() error {
			return c.Subscribe(ctx, mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: "hidden+file:///srv/readme"}})
		}},
		{"subscribe to a templated URI", func() error {
			return c.Subscribe(ctx, mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: "hidden+file:///srv/app/.env"}})
		}},
	}
	for _, tt := range tests {
		if err := tt.do(); err == nil || !strings.Contains(err.Error(), "mcp:hidden:") {
			t.Errorf("%s of the denied server = %v, want a refusal naming the rule", tt.name, err)
		}
	}
	if got, _ := e.hid.since(before); len(got) != 0 {
		t.Errorf("the denied server got %v, want nothing", got)
	}
	for _, name := range []string{"prompts/get", "completion/complete", "resources/subscribe"} {
		if len(decisionsOf(t, e.sink, "mcp:hidden:"+name)) == 0 {
			t.Errorf("no audit decision for mcp:hidden:%s", name)
		}
	}
}

func TestProfileCannotReadOtherServersTemplate(t *testing.T) {
	t.Parallel()
	spec := rules.Spec{
		Global:   rules.PolicySpec{Allow: []string{"mcp:*:*"}},
		Profiles: map[string]rules.PolicySpec{"only-fs": {Deny: []string{"mcp:hidden:*"}}},
	}
	e := newCatalogEnv(t, spec, Options{Profile: "only-fs"})
	c := e.client(t)
	_, err := c.ReadResource(t.Context(), mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "hidden+file:///outside/secret.txt"}})
	// Only the profile has this rule: the global policy allows everything.
	if err == nil || !strings.Contains(err.Error(), `deny rule "mcp:hidden:*"`) {
		t.Errorf("read through another server's template = %v, want a refusal by the profile's rule", err)
	}
	if got := e.hid.readURIs(); len(got) != 0 {
		t.Errorf("the other server was asked to read %q", got)
	}
	if _, err := c.ReadResource(t.Context(), mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "fs+file:///inside/ok.txt"}}); err != nil {
		t.Errorf("read through the profile's own server: %v", err)
	}
	templates, err := c.ListResourceTemplates(t.Context(), mcp.ListResourceTemplatesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tmpl := range templates.ResourceTemplates {
		if strings.HasPrefix(tmpl.URITemplate.Raw(), "hidden+") {
			t.Errorf("the profile sees the other server's template %s", tmpl.URITemplate.Raw())
		}
	}
}

func TestListingHidesWhatIsDenied(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t, denyHidden, Options{})
	c := e.client(t)
	ctx := t.Context()
	resources, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	templates, err := c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	prompts, err := c.ListPrompts(ctx, mcp.ListPromptsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range resources.Resources {
		got = append(got, r.URI)
	}
	for _, tmpl := range templates.ResourceTemplates {
		got = append(got, tmpl.URITemplate.Raw())
	}
	for _, p := range prompts.Prompts {
		got = append(got, p.Name)
	}
	want := []string{"fs+file:///srv/readme", "fs+file:///{+path}", "fs__greet"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("listed %q, want only fs's %q", got, want)
	}
}

// TestConditionalDenyRefusesButDoesNotHide: a deny with conditions refuses
// the reads it matches and hides nothing, as for tools.
func TestConditionalDenyRefusesButDoesNotHide(t *testing.T) {
	t.Parallel()
	spec := rules.Spec{Global: rules.PolicySpec{
		Deny:  []string{"mcp:fs:resources/read:uri=*/.env"},
		Allow: []string{"mcp:*:*"},
	}}
	e := newCatalogEnv(t, spec, Options{})
	c := e.client(t)
	if _, err := c.ReadResource(t.Context(), mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "fs+file:///srv/app/.env"}}); err == nil {
		t.Error("a read the conditional deny matches went through")
	}
	if _, err := c.ReadResource(t.Context(), mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "fs+file:///srv/app/main.go"}}); err != nil {
		t.Errorf("a read the conditional deny does not match: %v", err)
	}
	templates, err := c.ListResourceTemplates(t.Context(), mcp.ListResourceTemplatesRequest{})
	if err != nil || len(templates.ResourceTemplates) != 2 {
		t.Errorf("templates listed = %v, %v; want both", templates, err)
	}
}

func TestAskedResourceReadAsksTheHuman(t *testing.T) {
	t.Parallel()
	spec := rules.Spec{Global: rules.PolicySpec{Ask: []string{"mcp:fs:resources/read"}, Allow: []string{"mcp:*:*"}}}
	e := newCatalogEnv(t, spec, Options{})
	var asked []string
	h := elicitFunc(func(req mcp.ElicitationRequest) *mcp.ElicitationResult {
		asked = append(asked, req.Params.Message)
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"decision": "deny"}}}
	})
	c := e.client(t, client.WithElicitationHandler(h))
	_, err := c.ReadResource(t.Context(), mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "fs+file:///srv/app/x"}})
	if err == nil {
		t.Error("a read the human denied went through")
	}
	if len(asked) != 1 || !strings.Contains(asked[0], "mcp:fs:resources/read") {
		t.Errorf("the human was asked %q, want one form naming mcp:fs:resources/read", asked)
	}
	if got := e.fs.readURIs(); len(got) != 0 {
		t.Errorf("fs was asked to read %q after the human denied it", got)
	}
}
