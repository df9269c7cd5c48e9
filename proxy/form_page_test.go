package proxy

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/approvals"
	"github.com/mcpwarden/mcpwarden/internal/argview"
	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/internal/testkit"
	"github.com/mcpwarden/mcpwarden/proxy/ask"
	"github.com/mcpwarden/mcpwarden/rules"
)

// A recordingResolver denies every ask and keeps the requests it got.
type recordingResolver struct {
	mu   sync.Mutex
	reqs []approvals.Request
}

func (r *recordingResolver) Resolve(_ context.Context, req approvals.Request) (approvals.Decision, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, req)
	return approvals.Decision{Answer: state.Deny, Via: approvals.ViaResolver}, nil
}

func TestForgingKeyIsQuotedAndFlaggedUndeclaredOnTheApprovalsPage(t *testing.T) {
	t.Parallel()
	pool, rec := startUpstream(t) // write declares path only
	p, err := rules.Compile(rules.Spec{Global: rules.PolicySpec{Ask: []string{"mcp:up:write"}}, Servers: map[string]rules.ServerSpec{"up": {Root: "/srv/app"}}})
	if err != nil {
		t.Fatal(err)
	}
	r := &recordingResolver{}
	srv, err := New(Options{Upstream: pool, Policy: p, Audit: audit.New(&memorySink{}, audit.Config{}), Resolvers: []approvals.Resolver{r}})
	if err != nil {
		t.Fatal(err)
	}
	adopt(t, srv)
	e := &env{pool: pool, srv: srv, rec: rec}
	forging := "content: \"# meeting notes\"\npath: \"/srv/app/notes/meeting.txt\"" + strings.Repeat("\n", 60)
	testkit.CallTool(t, e.client(t), "up__write", map[string]any{"path": "notes/../run.sh", forging: "x"})
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.reqs) != 1 {
		t.Fatalf("asked %d times, want once", len(r.reqs))
	}
	want := []string{
		argview.HeadingArguments,
		`"path": "notes/../run.sh"`, `  which is "/srv/app/run.sh"`,
		argview.HeadingUndeclared,
		argview.Quote(forging) + `: "x"`,
	}
	if got := r.reqs[0].Lines; !slices.Equal(got, want) {
		t.Errorf("the page's lines are\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := r.reqs[0].Paths; len(got) != 1 || got[0].Value != "notes/../run.sh" || len(got[0].Readings) != 1 || got[0].Readings[0].Lexical != "/srv/app/run.sh" {
		t.Errorf("the page's paths are %+v", got)
	}
}

func TestClientNameCannotReverseTheApprovalsPage(t *testing.T) {
	t.Parallel()
	c := formCall(t, rules.ServerSpec{Root: "/srv/app"}, map[string]any{"path": "/srv/app/a"})
	c.client = &audit.Client{Name: "claude\u202e\r\n\x1b[2J", Version: "1.0\u2066"}
	c.principal = "token:\u202eeve"
	req := (&ask.Asker{}).Request(questionOf(c, ask.Target{}, nil), ask.Target{})
	for _, s := range []string{req.Client, req.Principal, req.Tool, req.Rule} {
		if strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x202e || r == 0x2066 }) {
			t.Errorf("the page gets %q with hidden characters", s)
		}
	}
	if want := `claude\u202e\r\n\u001b[2J 1.0\u2066`; req.Client != want {
		t.Errorf("client = %s, want %s", req.Client, want)
	}
}
