package proxy

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/approvals"
	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/proxy/ask"
	"github.com/mcpwarden/mcpwarden/proxy/scan"
)

// formRecorder answers result forms with one answer and keeps what the
// human was shown.
type formRecorder struct {
	answer *mcp.ElicitationResult
	mu     sync.Mutex
	shown  []string
}

func (f *formRecorder) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.shown = append(f.shown, req.Params.Message)
	return f.answer, nil
}

func (f *formRecorder) forms() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.shown...)
}

func choose(choice string) *mcp.ElicitationResult {
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"decision": choice}}}
}

// legacyClient connects a 2025-11-25 client that answers forms with h.
func legacyClient(t *testing.T, srv *Server, h client.ElicitationHandler) *client.Client {
	t.Helper()
	c := testkit.Connect(t, srv.MCP(), "2025-11-25", client.WithElicitationHandler(h), client.WithLegacyProtocolOnly())
	if err := c.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
	return c
}

// resultEvent is the last result event of sink.
func resultEvent(t *testing.T, sink *memorySink) audit.Event {
	t.Helper()
	var out *audit.Event
	for _, ev := range sink.events(t) {
		if ev.Event == audit.KindResult {
			out = &ev
		}
	}
	if out == nil {
		t.Fatal("no result event")
	}
	return *out
}

func TestResultWithSecretsIsHeldUntilAHumanAllowsIt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		answer    *mcp.ElicitationResult
		wantParts bool   // the client gets the credentials
		want      string // in what the client gets
		wantBy    audit.GrantedBy
		detail    string
	}{
		{"an allow as sent passes the credentials on", choose(ask.ResultChoiceAsSent), true, githubPAT, audit.GrantedByUserOnce, "passed on as sent after an allow"},
		{"an allow masked passes the result on redacted", choose(ask.ResultChoiceRedacted), false, scan.Mask, audit.GrantedByUserOnce, "redacted after an allow"},
		{"a deny withholds the result", choose(ask.ResultChoiceDeny), false, "withheld on the client's form", audit.GrantedByUserDenied, "(withheld, results: ask)"},
		{"a decline withholds the result", &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionDecline}}, false, "withheld on the client's form", audit.GrantedByUserDenied, "withheld"},
		{"a cancel with no one else to ask withholds the result", &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionCancel}}, false, "no one answered", audit.GrantedByNoElicitation, "withheld"},
		{"a choice the form did not offer withholds the result", choose("allow_session"), false, "no one answered", audit.GrantedByNoElicitation, "withheld"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, sink := leakEnvWith(t, "ask", Options{})
			form := &formRecorder{answer: tt.answer}
			c := legacyClient(t, srv, form)
			res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "vault__dump"}})
			if err != nil {
				t.Fatal(err)
			}
			got := testkit.Text(res)
			for _, part := range leakedParts {
				if strings.Contains(got, part) != tt.wantParts {
					t.Errorf("the client got %q: %v, want %v", part, !tt.wantParts, tt.wantParts)
				}
			}
			if !strings.Contains(got, tt.want) {
				t.Errorf("the client got %.300q, want %q", got, tt.want)
			}
			if wantErr := !tt.wantParts && tt.want != scan.Mask; res.IsError != wantErr {
				t.Errorf("isError = %v for %.200q", res.IsError, got)
			}
			forms := form.forms()
			if len(forms) != 1 || !strings.Contains(forms[0], "let the client see this result?") || !strings.Contains(forms[0], "mcp:vault:dump") || !strings.Contains(forms[0], scan.Mask) {
				t.Fatalf("the human was shown %q, want one result form with the result masked", forms)
			}
			for _, part := range leakedParts {
				if strings.Contains(forms[0], part) {
					t.Errorf("the form showed the human %q", part)
				}
			}
			ev := resultEvent(t, sink)
			if ev.GrantedBy != tt.wantBy || !strings.Contains(ev.Detail, tt.detail) || !strings.Contains(ev.Detail, "token") {
				t.Errorf("result event granted_by %q detail %q, want %q and %q", ev.GrantedBy, ev.Detail, tt.wantBy, tt.detail)
			}
			if want := audit.OutcomeOf(strings.Contains(tt.detail, "after an allow")); ev.Outcome != want {
				t.Errorf("result event outcome %q, want %q", ev.Outcome, want)
			}
			for _, part := range leakedParts {
				if strings.Contains(sinkText(sink), part) {
					t.Errorf("the audit holds %q", part)
				}
			}
		})
	}
}

func TestResultAskGoesToTheApprovalsPageWhenTheClientCannotBeAsked(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		d         approvals.Decision
		wantParts bool
		want      string
	}{
		{"an allow on the page passes the result on as sent", approvals.Decision{Answer: state.AllowOnce, Via: approvals.ViaPage, Who: "root"}, true, githubPAT},
		{"a deny on the page withholds it", approvals.Decision{Answer: state.Deny, Via: approvals.ViaPage}, false, "withheld on the approvals page"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			page := &standInResolver{d: tt.d}
			srv, sink := leakEnvWith(t, "ask", Options{Resolvers: []approvals.Resolver{page}})
			c := testkit.Connect(t, srv.MCP(), "") // no elicitation
			got := testkit.Text(testkit.CallTool(t, c, "vault__dump", map[string]any{}))
			for _, part := range leakedParts {
				if strings.Contains(got, part) != tt.wantParts {
					t.Errorf("the client got %q: %v, want %v", part, !tt.wantParts, tt.wantParts)
				}
			}
			if !strings.Contains(got, tt.want) || page.asked.Load() != 1 {
				t.Errorf("the client got %.300q after %d asks, want %q after one", got, page.asked.Load(), tt.want)
			}
			if ev := resultEvent(t, sink); ev.GrantedBy != audit.GrantedByApprovalPage {
				t.Errorf("granted_by %q, want %q", ev.GrantedBy, audit.GrantedByApprovalPage)
			}
		})
	}
}

// slowResolver answers only when its ask is given up.
type slowResolver struct{}

func (slowResolver) Resolve(ctx context.Context, _ approvals.Request) (approvals.Decision, error) {
	<-ctx.Done()
	return approvals.Decision{Via: approvals.ViaPage}, ctx.Err()
}

func TestResultAskWithholdsTheResultOnTimeout(t *testing.T) {
	t.Parallel()
	srv, sink := leakEnvWith(t, "ask", Options{Resolvers: []approvals.Resolver{slowResolver{}}, AskTimeout: 200 * time.Millisecond})
	c := testkit.Connect(t, srv.MCP(), "")
	res := testkit.CallTool(t, c, "vault__dump", map[string]any{})
	got := testkit.Text(res)
	for _, part := range leakedParts {
		if strings.Contains(got, part) {
			t.Errorf("the client got %q", part)
		}
	}
	if !res.IsError || !strings.Contains(got, "no answer within ask.timeout") {
		t.Errorf("got %.300q, want the result withheld for want of an answer", got)
	}
	if ev := resultEvent(t, sink); ev.GrantedBy != audit.GrantedByTimeout {
		t.Errorf("granted_by %q, want %q", ev.GrantedBy, audit.GrantedByTimeout)
	}
}

func TestResourceWithSecretsIsHeldUntilAHumanAllowsIt(t *testing.T) {
	t.Parallel()
	srv, sink := leakEnvWith(t, "ask", Options{})
	form := &formRecorder{answer: choose(ask.ResultChoiceRedacted)}
	c := legacyClient(t, srv, form)
	res, err := c.ReadResource(t.Context(), mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "file:///creds"}})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Contents[0].(mcp.TextResourceContents).Text
	for _, part := range leakedParts {
		if strings.Contains(text, part) {
			t.Errorf("the client got %q", part)
		}
	}
	if !strings.Contains(text, scan.Mask) || len(form.forms()) != 1 {
		t.Errorf("got %q after %d forms, want it masked after one", text, len(form.forms()))
	}
	if ev := resultEvent(t, sink); !strings.Contains(ev.Detail, "redacted after an allow") {
		t.Errorf("result detail %q", ev.Detail)
	}
	form.mu.Lock()
	form.answer = choose(ask.ResultChoiceDeny)
	form.mu.Unlock()
	if _, err := c.ReadResource(t.Context(), mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "file:///creds"}}); err == nil || !strings.Contains(err.Error(), "withheld") {
		t.Errorf("a read the human withheld: %v", err)
	}
}

func TestPromptWithSecretsIsHeldUntilAHumanAllowsIt(t *testing.T) {
	t.Parallel()
	srv, sink := leakEnvWith(t, "ask", Options{})
	form := &formRecorder{answer: choose(ask.ResultChoiceRedacted)}
	c := legacyClient(t, srv, form)
	res, err := c.GetPrompt(t.Context(), mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "vault__creds"}})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(res)
	got := clientSees(t, string(raw))
	for _, part := range leakedParts {
		if strings.Contains(got, part) {
			t.Errorf("the client got %q", part)
		}
	}
	forms := form.forms()
	if !strings.Contains(got, scan.Mask) || len(forms) != 1 || !strings.Contains(forms[0], "mcp:vault:prompts/get") {
		t.Fatalf("got %.300q after forms %q, want it masked after one form", got, forms)
	}
	if strings.Contains(forms[0], awsKey) || strings.Contains(forms[0], base64.StdEncoding.EncodeToString([]byte(binaryLeak))) {
		t.Errorf("the form showed the human the credentials, in a blob or not")
	}
	if ev := resultEvent(t, sink); !strings.Contains(ev.Detail, "redacted after an allow") {
		t.Errorf("result detail %q", ev.Detail)
	}
}
