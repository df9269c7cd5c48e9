package rules

import (
	"strings"
	"testing"
)

// labelFactSpec is a policy whose rules read @label: the labels armed in
// the call's session.
func labelFactSpec() Spec {
	return Spec{
		Global: PolicySpec{
			Deny:  []string{"mcp:fs:write_file:@label=private"},
			Ask:   []string{"mcp:mail:send_*:@label=untrusted_*"},
			Allow: []string{"mcp:mail:*", "mcp:fs:*", "mcp:web:*", "mcp:gh:*:@label=reviewed"},
		},
		Labels: map[string][]string{
			"untrusted_input": {"mcp:web:fetch"},
			"private":         {"mcp:fs:read_file"},
			"reviewed":        {"mcp:gh:get_review"},
		},
	}
}

func TestLabelFactMatchesTheLabelsTheSessionHasSeen(t *testing.T) {
	t.Parallel()
	p := mustCompile(t, labelFactSpec())
	fetched := Arming{Label: "untrusted_input", ID: "f", Tool: "mcp:web:fetch"}
	private := Arming{Label: "private", ID: "p", Tool: "mcp:fs:read_file"}
	reviewed := Arming{Label: "reviewed", ID: "r", Tool: "mcp:gh:get_review"}
	tests := []struct {
		name  string
		armed []Arming
		call  Call
		want  Decision
		rule  string
	}{
		{"mail is allowed when nothing is armed", nil, Call{Server: "mail", Tool: "send_mail"}, Allow, "mcp:mail:*"},
		{"mail is asked once untrusted input was seen", []Arming{fetched}, Call{Server: "mail", Tool: "send_mail"}, Ask, "mcp:mail:send_*:@label=untrusted_*"},
		{"a write is denied once private data was read", []Arming{fetched, private}, Call{Server: "fs", Tool: "write_file"}, Deny, "mcp:fs:write_file:@label=private"},
		{"a write is allowed before private data was read", []Arming{fetched}, Call{Server: "fs", Tool: "write_file"}, Allow, "mcp:fs:*"},
		{"an allow on a label holds when it is the only label armed", []Arming{reviewed}, Call{Server: "gh", Tool: "merge"}, Allow, "mcp:gh:*:@label=reviewed"},
		{"an allow on a label does not hold with nothing armed", nil, Call{Server: "gh", Tool: "merge"}, Ask, RuleDefault},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.call.Armed = tt.armed
			got := p.Decide(tt.call)
			if got.Decision != tt.want || got.Rule != tt.rule {
				t.Errorf("Decide = %v by %q (%s), want %v by %q", got.Decision, got.Rule, got.Reason, tt.want, tt.rule)
			}
			if e := p.Explain(tt.call); e.Verdict != got {
				t.Errorf("Explain = %+v, Decide = %+v", e.Verdict, got)
			}
		})
	}
}

// An allow reads a multi-valued key as satisfied only if every value
// satisfies it: a session that saw a reviewed change and also private
// data is not allowed by `@label=reviewed`.
func TestAllowOnALabelDoesNotHoldWhenAnotherLabelIsArmedToo(t *testing.T) {
	t.Parallel()
	p := mustCompile(t, labelFactSpec())
	c := Call{Server: "gh", Tool: "merge", Armed: []Arming{{Label: "reviewed"}, {Label: "private"}}}
	if got := p.Decide(c); got.Decision == Allow {
		t.Errorf("Decide = %+v, want the allow on @label=reviewed not to hold", got)
	}
}

func TestMisspeltLabelInARuleIsALoadError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		rule   string
		labels map[string][]string
		want   string // in the error; "" = compiles
	}{
		{"a misspelt label name", "mcp:mail:*:@label=untrusted_inptu", map[string][]string{"untrusted_input": {"mcp:web:fetch"}}, `@label pattern "untrusted_inptu" names no label defined under labels (untrusted_input)`},
		{"a label when none is defined", "mcp:mail:*:@label=untrusted_input", nil, "no labels are defined under labels"},
		{"a glob on label names", "mcp:mail:*:@label=untrusted_*", map[string][]string{"untrusted_input": {"mcp:web:fetch"}}, ""},
		{"a regexp on label names", "mcp:mail:*:@label~=untrusted_.*", map[string][]string{"untrusted_input": {"mcp:web:fetch"}}, ""},
		{"a known label", "mcp:mail:*:@label=untrusted_input", map[string][]string{"untrusted_input": {"mcp:web:fetch"}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Compile(Spec{Global: PolicySpec{Deny: []string{tt.rule}}, Labels: tt.labels})
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("got %v, want it compiled", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("got %v, want an error with %s", err, tt.want)
			}
		})
	}
}

func TestLabelFactWithNothingArmedDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	p := mustCompile(t, labelFactSpec())
	for _, c := range []Call{{Server: "mail", Tool: "send_mail"}, {Server: "fs", Tool: "write_file"}, {Server: "mail", Tool: "send_mail", Armed: []Arming{{Label: "reviewed"}}}} {
		if n := testing.AllocsPerRun(100, func() { p.Decide(c) }); n != 0 {
			t.Errorf("Decide of %s:%s allocates %v times, want 0", c.Server, c.Tool, n)
		}
	}
}

// BenchmarkDecideLabelFact measures benchSpec(1000) with a deny rule on
// @label added, with nothing armed: the common case, which must cost
// what BenchmarkDecide's does.
func BenchmarkDecideLabelFact(b *testing.B) {
	spec := benchSpec(1000)
	spec.Labels = map[string][]string{"untrusted_input": {"mcp:web:fetch"}}
	spec.Global.Deny = append(spec.Global.Deny, "mcp:*:*:@label=untrusted_input")
	p := mustCompile(b, spec)
	for _, c := range benchCalls(1000) {
		b.Run("nothing_armed/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.Decide(c.call)
			}
		})
	}
}
