//go:build unix

package upstream

import (
	"fmt"
	"os/exec"
	"testing"
)

func TestChildStoppedBySignalIsShutdownNoise(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		script string
		want   bool
	}{
		{"killed by SIGKILL", "kill -KILL $$", true},
		{"terminated by SIGTERM", "kill -TERM $$", true},
		{"interrupted by SIGINT", "trap - INT; kill -INT $$", false},
		{"exited with status 3", "exit 3", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := exec.CommandContext(t.Context(), "sh", "-c", tt.script).Run()
			if err == nil {
				t.Fatal("the child exited cleanly")
			}
			wrapped := fmt.Errorf("closing: %w", err)
			if got := isShutdownNoise(wrapped); got != tt.want {
				t.Errorf("isShutdownNoise(%v) = %v, want %v", wrapped, got, tt.want)
			}
		})
	}
}
