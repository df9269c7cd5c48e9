package config

import (
	"os"
	"strings"
	"testing"
)

func TestReplicaID(t *testing.T) {
	t.Parallel()
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	const state = "state: { url: \"redis://127.0.0.1:6379\" }\n"
	tests := []struct {
		name    string
		data    string
		environ []string
		want    string
	}{
		{"one replica without a state block has none", minimal, nil, ""},
		{"many replicas default to the host name", minimal + state, nil, host},
		{"the config names it", minimal + state + "replica: mcpwarden-0\n", nil, "mcpwarden-0"},
		{"the environment names it", minimal + state, []string{"MCPWARDEN_REPLICA=pod-7f9c"}, "pod-7f9c"},
		{"one replica may name itself too", minimal, []string{"MCPWARDEN_REPLICA=solo"}, "solo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse([]byte(tt.data), ".yaml", "/cfg", tt.environ)
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.ReplicaID(); got != tt.want {
				t.Errorf("ReplicaID() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestReplicaRejectsBadInputNamingTheKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		data    string
		environ []string
		want    string
	}{
		{"a newline that would forge an audit field", minimal + "replica: \"a\\n\\\"decision\\\":\\\"allow\"\n", nil, "replica: "},
		{"a leading dash", minimal + "replica: -x\n", nil, "replica: "},
		{"a space", minimal, []string{"MCPWARDEN_REPLICA=pod 1"}, "MCPWARDEN_REPLICA"},
		{"too long", minimal + "replica: " + strings.Repeat("a", 254) + "\n", nil, "replica: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tt.data), ".yaml", "/cfg", tt.environ)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse = %v, want an error naming %q", err, tt.want)
			}
		})
	}
}
