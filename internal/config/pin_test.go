package config

import (
	"strings"
	"testing"

	"github.com/mcpwarden/mcpwarden/internal/pin"
)

func TestOnToolChangeIsAReaction(t *testing.T) {
	t.Parallel()
	data := minimal + "    on_tool_change: hide\npin: { on_tool_change: warn }\n"
	cfg, err := Parse([]byte(data), ".yaml", "/cfg", nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Pin.OnToolChange != pin.Warn || cfg.Servers["fs"].OnToolChange != pin.Hide {
		t.Errorf("pin.on_tool_change %q, servers.fs.on_tool_change %q; want warn, hide", cfg.Pin.OnToolChange, cfg.Servers["fs"].OnToolChange)
	}
	cfg, err = Parse([]byte(data), ".yaml", "/cfg", []string{"MCPWARDEN_PIN__ON_TOOL_CHANGE=deny"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Pin.OnToolChange != pin.Deny {
		t.Errorf("the environment set pin.on_tool_change %q, want deny", cfg.Pin.OnToolChange)
	}
	for _, bad := range []string{"pin: { on_tool_change: block }\n", "pin: { on_tool_change: Ask }\n"} {
		if _, err := Parse([]byte(minimal+bad), ".yaml", "/cfg", nil); err == nil || !strings.Contains(err.Error(), "pin.on_tool_change") {
			t.Errorf("Parse(%q) = %v, want an error naming pin.on_tool_change", bad, err)
		}
	}
}
