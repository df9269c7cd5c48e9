package policydiff_test

import (
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpwarden/mcpwarden/internal/app/apptest"
	"github.com/mcpwarden/mcpwarden/internal/policydiff"
	"github.com/mcpwarden/mcpwarden/internal/recorded"
	"github.com/mcpwarden/mcpwarden/rules"
)

const servers = `servers:
  fs: { command: /bin/true }
  web: { command: /bin/true }
audit: { sink: none }
`

// decider is servers with policy as policy diff replays requests under it.
func decider(t *testing.T, policy string) policydiff.Policy {
	t.Helper()
	return apptest.Setup(t, t.TempDir(), servers+policy).Replayed()
}

func req(tool string, args map[string]any) recorded.Request {
	server, name := "fs", tool
	if tool == "fetch" {
		server = "web"
	}
	return recorded.Request{Call: rules.Call{Server: server, Tool: name, Arguments: args}, Where: "a.jsonl:1"}
}

func TestReplayListsEveryChangedDecision(t *testing.T) {
	t.Parallel()
	reqs := []recorded.Request{
		req("read_file", map[string]any{"path": "/srv/a"}),
		req("read_file", map[string]any{"path": "/srv/b"}),
		req("read_file", map[string]any{"path": "/etc/passwd"}),
		req("write_file", map[string]any{"path": "/srv/a"}),
		req("fetch", map[string]any{"url": "https://example.com/"}),
		req("delete_file", map[string]any{"path": "/srv/a"}),
	}
	tests := []struct {
		name          string
		old, new      string
		changed, wide int
		groups        []string // decision rule widened count
	}{
		{"the same policy changes nothing",
			"policy: { default: ask, allow: [\"mcp:fs:read_*\"] }\n", "policy: { default: ask, allow: [\"mcp:fs:read_*\"] }\n", 0, 0, nil},
		{"a rule that decides the same way under another name changes nothing",
			"policy: { default: ask, allow: [\"mcp:fs:read_*\"] }\n", "policy: { default: ask, allow: [\"mcp:fs:read_file\"] }\n", 0, 0, nil},
		{"a new allow rule widens, listed first; a deny by another rule is no change",
			"policy: { default: ask, deny: [\"mcp:fs:delete_file\"] }\n",
			"policy: { default: ask, allow: [\"mcp:fs:read_file:path=/srv/**\"], deny: [\"mcp:fs:*_file:path=/srv/a\"] }\n", 3, 1,
			[]string{"allow mcp:fs:read_file:path=/srv/** true 1", "deny mcp:fs:*_file:path=/srv/a false 2"}},
		{"a looser default widens every request it decides",
			"policy: { default: deny, allow: [\"mcp:web:*\"] }\n", "policy: { default: allow, ask: [\"mcp:fs:write_file\"], allow: [\"mcp:web:*\"] }\n", 5, 4,
			[]string{"allow default true 4", "ask mcp:fs:write_file false 1"}},
		{"a narrower policy changes without widening",
			"policy: { default: allow }\n", "policy: { default: allow, deny: [\"mcp:web:*\"] }\n", 1, 0,
			[]string{"deny mcp:web:* false 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := policydiff.Replay(reqs, decider(t, tt.old), decider(t, tt.new))
			if res.Replayed != len(reqs) || res.Changed != tt.changed || res.Widened != tt.wide {
				t.Errorf("replayed %d, changed %d, widened %d; want %d, %d, %d", res.Replayed, res.Changed, res.Widened, len(reqs), tt.changed, tt.wide)
			}
			var got []string
			for _, g := range res.Groups {
				got = append(got, g.Decision.String()+" "+g.Rule+" "+strconv.FormatBool(g.Widened)+" "+strconv.Itoa(g.Count))
			}
			if diff := cmp.Diff(tt.groups, got); diff != "" {
				t.Errorf("groups (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReplayGroupShowsHowTheOldPolicyDecided(t *testing.T) {
	t.Parallel()
	reqs := []recorded.Request{
		req("read_file", map[string]any{"path": "/srv/a"}),
		req("delete_file", map[string]any{"path": "/srv/a"}),
		req("delete_file", map[string]any{"path": "/srv/b"}),
		req("delete_file", map[string]any{"path": "/srv/c"}),
		req("delete_file", map[string]any{"path": "/srv/d"}),
	}
	res := policydiff.Replay(reqs,
		decider(t, "policy: { default: ask, deny: [\"mcp:fs:delete_file\"] }\n"),
		decider(t, "policy: { default: ask, allow: [\"mcp:fs:*\"] }\n"))
	if len(res.Groups) != 1 {
		t.Fatalf("groups = %+v, want one", res.Groups)
	}
	g := res.Groups[0]
	want := []policydiff.From{{Decision: rules.Deny, Rule: "mcp:fs:delete_file", Count: 4}, {Decision: rules.Ask, Rule: rules.RuleDefault, Count: 1}}
	if diff := cmp.Diff(want, g.From); diff != "" {
		t.Errorf("from (-want +got):\n%s", diff)
	}
	if len(g.Examples) != policydiff.MaxExamples || g.Examples[0].Old != "ask (default)" || g.Examples[0].New != "allow (mcp:fs:*)" {
		t.Errorf("examples = %+v, want the first %d, old and new named", g.Examples, policydiff.MaxExamples)
	}
}

// TestReplayArmsFlowLabelsInEachSession: a flow rule decides a request as
// in its session, after the requests before it under the policy being
// replayed: a new flow rule that asks about mail sent after a fetch
// changes the send that followed a fetch in its session, and not the send
// of another session.
func TestReplayArmsFlowLabelsInEachSession(t *testing.T) {
	t.Parallel()
	fetch := req("fetch", map[string]any{"url": "https://example.com/"})
	send := recorded.Request{Call: rules.Call{Server: "web", Tool: "send_mail"}, Where: "a.jsonl:3"}
	fetch.Session, fetch.ID, fetch.Decision = "s1", "f1", "allow"
	sendAfter, sendAlone := send, send
	sendAfter.Session, sendAlone.Session = "s1", "s2"
	old := decider(t, "policy: { default: allow }\n")
	flow := decider(t, "labels:\n  untrusted: [\"mcp:web:fetch\"]\n  egress: [\"mcp:web:send_*\"]\nflow:\n  - { after: untrusted, then: ask, on: egress }\npolicy: { default: allow }\n")
	res := policydiff.Replay([]recorded.Request{fetch, sendAfter, sendAlone}, old, flow)
	if res.Changed != 1 || len(res.Groups) != 1 || res.Groups[0].Decision != rules.Ask || res.Groups[0].Examples[0].Where != "a.jsonl:3" {
		t.Fatalf("replay = %+v, want the send after the fetch asked, alone", res)
	}
	// Back again, the flow rule's ask is the old decision.
	if back := policydiff.Replay([]recorded.Request{fetch, sendAfter, sendAlone}, flow, old); back.Changed != 1 || back.Widened != 1 {
		t.Errorf("replay back = %+v, want the one send widened", back)
	}
}
