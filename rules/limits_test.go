package rules

import (
	"strings"
	"testing"
	"time"
)

func TestLimitSpecsAreCheckedAndNameTheirKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		spec LimitSpec
		want string // in the error; "" = compiles
	}{
		{"a valid limit compiles", LimitSpec{Match: "mcp:mail:send_*", Max: 5, Window: time.Minute, Then: "ask"}, ""},
		{"a limit per principal compiles", LimitSpec{Match: "mcp:mail:send_*", Max: 5, Per: "principal", Window: time.Minute, Then: "ask"}, ""},
		{"a bad pattern names its key", LimitSpec{Match: "mail:send", Max: 5, Window: time.Minute, Then: "ask"}, "limits[0].match"},
		{"a zero max is refused", LimitSpec{Match: "mcp:*:*", Window: time.Minute, Then: "deny"}, "limits[0].max"},
		{"a missing window is refused", LimitSpec{Match: "mcp:*:*", Max: 1, Then: "deny"}, "limits[0].window"},
		{"an unknown per is refused", LimitSpec{Match: "mcp:*:*", Max: 1, Per: "tenant", Window: time.Minute, Then: "deny"}, `limits[0].per: "tenant" is not session, principal or global`},
		{"a duration under per says it goes under window", LimitSpec{Match: "mcp:*:*", Max: 1, Per: "1h", Then: "deny"}, `limits[0].per: "1h" is a duration; per is session, principal or global, and the duration goes under window (window: 1h)`},
		{"the old scope key says to write per", LimitSpec{Match: "mcp:*:*", Max: 1, Window: time.Minute, Scope: "principal", Then: "deny"}, "limits[0].scope: not a limit key: write per: principal"},
		{"then allow cannot lower a decision", LimitSpec{Match: "mcp:*:*", Max: 1, Window: time.Minute, Then: "allow"}, "limits[0].then"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Compile(Spec{Global: PolicySpec{Allow: []string{"mcp:*:*"}}, Limits: []LimitSpec{tt.spec}})
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("got %v, want it compiled", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("got %v, want an error naming %s", err, tt.want)
			}
		})
	}
}

func TestResultsValuesAreChecked(t *testing.T) {
	t.Parallel()
	p, err := Compile(Spec{Results: "deny", Servers: map[string]ServerSpec{"fs": {Results: "log"}, "web": {}}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Results("fs") != ResultLog || p.Results("web") != ResultDeny {
		t.Errorf("results fs=%v web=%v, want log and deny", p.Results("fs"), p.Results("web"))
	}
	if _, err := Compile(Spec{Servers: map[string]ServerSpec{"fs": {Results: "drop"}}}); err == nil || !strings.Contains(err.Error(), "servers.fs.results") {
		t.Errorf("got %v, want an error naming servers.fs.results", err)
	}
}

func TestLimitsMatchTheirPatternAndEscalateNeverLower(t *testing.T) {
	t.Parallel()
	p, err := Compile(Spec{
		Global: PolicySpec{Allow: []string{"mcp:*:*"}},
		Limits: []LimitSpec{{Match: "mcp:mail:send_*", Max: 2, Per: "principal", Window: time.Hour, Then: "ask"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Limits(Call{Server: "mail", Tool: "list"}); got != nil {
		t.Errorf("a call the limit does not match got %v", got)
	}
	ls := p.Limits(Call{Server: "mail", Tool: "send_mail"})
	if len(ls) != 1 || ls[0].Max != 2 || ls[0].Per != ScopePrincipal {
		t.Fatalf("got %v, want the one limit", ls)
	}
	tests := []struct {
		name string
		v    Verdict
		want Decision
		gate string
	}{
		{"an allow becomes the limit's ask", Verdict{Decision: Allow, Gate: GatePolicy}, Ask, GateLimit},
		{"another rule's ask becomes the limit's", Verdict{Decision: Ask, Gate: GatePolicy}, Ask, GateLimit},
		{"a flow rule's ask stays the flow rule's", Verdict{Decision: Ask, Gate: GateFlow}, Ask, GateFlow},
		{"a deny stays a deny", Verdict{Decision: Deny, Gate: GatePolicy}, Deny, GatePolicy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := OverLimit(tt.v, ls[0], 3)
			if v.Decision != tt.want || v.Gate != tt.gate {
				t.Errorf("got %v by %s, want %v by %s", v.Decision, v.Gate, tt.want, tt.gate)
			}
			if v.Gate == GateLimit && !strings.Contains(v.Reason, "request 3 in 1h0m0s per principal") {
				t.Errorf("reason %q does not say the count", v.Reason)
			}
		})
	}
}
