package audit

import (
	"encoding/json"
	"testing"
)

// TestGrantedByAndOutcomeKeepTheirLogTexts pins the texts written to the
// log for each GrantedBy and Outcome: they were strings before they were
// uint8 enums, and a log written by either must read the same.
func TestGrantedByAndOutcomeKeepTheirLogTexts(t *testing.T) {
	t.Parallel()
	grantedBy := map[GrantedBy]string{
		GrantedByNone: "", GrantedByRule: "rule", GrantedByUserOnce: "user_once", GrantedByUserSession: "user_session",
		GrantedByUserDenied: "user_denied", GrantedByTimeout: "timeout", GrantedByNoElicitation: "no_elicitation",
		GrantedByApprovalPage: "approval_page", GrantedByApprovalCLI: "approval_cli", GrantedByResolver: "resolver",
		GrantedByShadow: "shadow",
	}
	if len(grantedBy) != len(grantedByNames) {
		t.Fatalf("the test knows %d granted_by texts, the table has %d", len(grantedBy), len(grantedByNames))
	}
	for g, want := range grantedBy {
		b, err := g.MarshalText()
		var back GrantedBy
		if err != nil || string(b) != want || back.UnmarshalText(b) != nil || back != g {
			t.Errorf("GrantedBy %d: text %q, %v, reads back as %d; want %q", uint8(g), b, err, uint8(back), want)
		}
	}
	outcome := map[Outcome]string{OutcomeNone: "", OutcomeAllowed: "allowed", OutcomeRefused: "refused"}
	if len(outcome) != len(outcomeNames) {
		t.Fatalf("the test knows %d outcome texts, the table has %d", len(outcome), len(outcomeNames))
	}
	for o, want := range outcome {
		b, err := o.MarshalText()
		var back Outcome
		if err != nil || string(b) != want || back.UnmarshalText(b) != nil || back != o {
			t.Errorf("Outcome %d: text %q, %v, reads back as %d; want %q", uint8(o), b, err, uint8(back), want)
		}
	}
}

// TestALineWrittenWithStringEnumsReadsAndWritesTheSame reads a decision
// line as the log wrote it when GrantedBy and Outcome were strings, and
// writes it again byte for byte, through both encoders.
func TestALineWrittenWithStringEnumsReadsAndWritesTheSame(t *testing.T) {
	t.Parallel()
	line := `{"time":"2026-12-01T10:00:00Z","event":"decision","id":"a1","tool":"mcp:fs:write_file","decision":"ask","rule":"mcp:fs:write_*","granted_by":"user_session","outcome":"refused","reason":"r","prev_sha256":""}`
	var e Event
	if err := json.Unmarshal([]byte(line), &e); err != nil {
		t.Fatal(err)
	}
	if e.GrantedBy != GrantedByUserSession || e.Outcome != OutcomeRefused {
		t.Fatalf("read granted_by %v outcome %v, want user_session, refused", e.GrantedBy, e.Outcome)
	}
	got, err := appendEvent(nil, &e)
	if err != nil {
		t.Fatal(err)
	}
	if want := line[:len(line)-len(`""}`)]; string(got) != want {
		t.Errorf("appendEvent wrote\n%s\nwant\n%s", got, want)
	}
	checkSameEncoding(t, e)
	for _, bad := range []string{`{"granted_by":"user_always"}`, `{"outcome":"maybe"}`} {
		if err := json.Unmarshal([]byte(bad), new(Event)); err == nil {
			t.Errorf("%s reads without error: an unknown text must not become another value", bad)
		}
	}
}
