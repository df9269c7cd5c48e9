package audit

import (
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     Config
		wantErr string // substring; "" for valid
	}{
		{"the zero config is stderr", Config{}, ""},
		{"a path alone is a file sink", Config{Path: "a.jsonl", Fsync: true, MaxSizeMB: 10, MaxBackups: 3}, ""},
		{"none is valid", Config{Sink: "none"}, ""},
		{"a URL alone is an http sink", Config{URL: "https://audit.example/in"}, ""},
		{"an unknown sink", Config{Sink: "syslog"}, "audit.sink"},
		{"a file sink without path", Config{Sink: "file"}, "audit.path"},
		{"a path with the stderr sink", Config{Sink: "stderr", Path: "a"}, "audit.path"},
		{"fsync without a file", Config{Fsync: true}, "audit.fsync"},
		{"a bad URL", Config{Sink: "http", URL: "ftp://x"}, "audit.url"},
		{"a negative size", Config{Path: "a", MaxSizeMB: -1}, "audit.max_size_mb"},
		{"a short limit lowers the default prefix", Config{MaxStringLen: 50}, ""},
		{"a prefix longer than the limit", Config{MaxStringLen: 50, KeepPrefixLen: 60}, "audit.keep_prefix_len"},
		{"an empty redact key", Config{RedactKeys: []string{"ok", ""}}, "audit.redact_keys[1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.cfg.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Validate: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Validate = %v, want an error naming %s", err, tt.wantErr)
			}
		})
	}
}

func TestCheckpointSettingsAreValidatedNamingTheirKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"a negative event count", Config{Path: "/l/a.jsonl", CheckpointEvery: -1}, "audit.checkpoint_every"},
		{"a negative interval", Config{Path: "/l/a.jsonl", CheckpointInterval: -time.Second}, "audit.checkpoint_interval"},
		{"a witness with unsigned", Config{Path: "/l/a.jsonl", Unsigned: true, Witness: "stderr"}, "audit.unsigned"},
		{"a witness with sink none", Config{Sink: SinkNone, Witness: "stderr"}, "audit.witness"},
		{"a witness in the log's folder", Config{Path: "/l/a.jsonl", Witness: "/l/w.jsonl"}, "audit.witness"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if err := tt.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate = %v, want an error naming %s", err, tt.want)
			}
		})
	}
}
