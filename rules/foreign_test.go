package rules

import (
	"strings"
	"testing"
)

func TestRulesInAnotherToolsNotationSayHowToWriteThem(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, rule, want string
	}{
		{"a call with a key names the condition", "read_file(path=/tmp/*)", `"mcp:<server>:read_file:path=/tmp/*"`},
		{"a call with two keys names both", "move_file(source=/a, destination=/b)", `"mcp:<server>:move_file:source=/a:destination=/b"`},
		{"a call with a bare pattern takes it as the path", "Read(/tmp/**)", `"mcp:<server>:Read:@path=/tmp/**"`},
		{"a call without arguments names the tool", "list_directory()", `"mcp:<server>:list_directory"`},
		{"a client's wire name names server and tool", "mcp__fs__read_file", `"mcp:fs:read_file"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Compile(Spec{Global: PolicySpec{Allow: []string{tc.rule}}})
			if err == nil {
				t.Fatalf("%q compiled", tc.rule)
			}
			if !strings.Contains(err.Error(), "write "+tc.want) {
				t.Errorf("error %q does not say to write %s", err, tc.want)
			}
		})
	}
}
