package config

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpwarden/mcpwarden/rules"
)

func TestLimitsAndResultsLoad(t *testing.T) {
	t.Parallel()
	data := minimal + `
results: deny
limits:
  - { match: "mcp:mail:send_*", max: 20, per: principal, window: 1h, then: ask }
`
	cfg, err := Parse([]byte(data), ".yaml", "/cfg", nil)
	if err != nil {
		t.Fatal(err)
	}
	spec := cfg.RulesSpecIn("/work")
	want := []rules.LimitSpec{{Match: "mcp:mail:send_*", Max: 20, Per: "principal", Window: time.Hour, Then: "ask"}}
	if diff := cmp.Diff(want, spec.Limits); diff != "" {
		t.Errorf("limits (-want +got):\n%s", diff)
	}
	if spec.Results != "deny" {
		t.Errorf("results %q, want deny", spec.Results)
	}
}

func TestLimitAndResultsMistakesNameTheKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		data string
		want string
	}{
		{"a misspelt limit key", "limits: [{match: \"mcp:a:b\", max: 1, window: 1m, then: ask, scop: session}]\n", "limits[0].scop: unknown key; did you mean limits[0].scope?"},
		{"a limit without a window", "limits: [{match: \"mcp:a:b\", max: 1, then: ask}]\n", "limits[0].window"},
		{"a limit written the old way, with a duration under per", "limits: [{match: \"mcp:a:b\", max: 1, per: 1m, then: ask}]\n", `limits[0].per: "1m" is a duration`},
		{"a limit with the old scope key", "limits: [{match: \"mcp:a:b\", max: 1, window: 1m, scope: principal, then: ask}]\n", "limits[0].scope: not a limit key: write per: principal"},
		{"a window that is no duration", "limits: [{match: \"mcp:a:b\", max: 1, window: principal, then: ask}]\n", "limits[0].window"},
		{"a limit that allows", "limits: [{match: \"mcp:a:b\", max: 1, window: 1m, then: allow}]\n", "limits[0].then"},
		{"an unknown results action", "results: hide\n", `results: "hide" is not a result action`},
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
