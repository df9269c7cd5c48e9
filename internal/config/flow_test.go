package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpwarden/mcpwarden/rules"
)

func TestLabelsAndFlowLoad(t *testing.T) {
	t.Parallel()
	data := minimal + `
labels:
  untrusted_input: ["mcp:web:fetch", "mcp:mail:read_*"]
  egress: ["mcp:mail:send_*"]
flow:
  - { after: untrusted_input, then: ask, on: egress }
`
	cfg, err := Parse([]byte(data), ".yaml", "/cfg", nil)
	if err != nil {
		t.Fatal(err)
	}
	spec := cfg.RulesSpecIn("/work")
	want := rules.Spec{
		Labels: map[string][]string{"untrusted_input": {"mcp:web:fetch", "mcp:mail:read_*"}, "egress": {"mcp:mail:send_*"}},
		Flow:   []rules.FlowSpec{{After: "untrusted_input", Then: "ask", On: "egress"}},
	}
	if diff := cmp.Diff(want.Labels, spec.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want.Flow, spec.Flow); diff != "" {
		t.Errorf("flow (-want +got):\n%s", diff)
	}
}

func TestLabelAndFlowMistakesNameTheKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		data string
		want string
	}{
		{"a misspelt flow key", "labels: {egress: [\"mcp:a:b\"]}\nflow: [{after: egress, then: ask, onn: egress}]\n", "flow[0].onn: unknown key; did you mean flow[0].on?"},
		{"a bad label pattern", "labels: {egress: [\"mail:send\"]}\n", "labels.egress[0]"},
		{"a flow rule naming no label", "labels: {egress: [\"mcp:a:b\"]}\nflow: [{after: untrusted, then: deny, on: egress}]\n", "flow[0].after"},
		{"a flow rule that allows", "labels: {egress: [\"mcp:a:b\"]}\nflow: [{after: egress, then: allow, on: egress}]\n", "flow[0].then"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(minimal+tt.data), ".yaml", "/cfg", nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse = %v, want an error naming %s", err, tt.want)
			}
		})
	}
}
