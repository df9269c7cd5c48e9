package sandbox

import (
	"errors"
	"os/exec"
	"syscall"
	"testing"
)

// mcpwarden reads how a server ended (a stop it asked for is not a
// crash): tier landlock's supervisor must end as the server did.
func TestSupervisorEndsAsTheServerDid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		script string
		code   int
		signal syscall.Signal
	}{
		{"an exit status is passed on", "exit 3", 3, 0},
		{"a clean exit is passed on", "exit 0", 0, 0},
		{"a signal that ended it is passed on", "kill -TERM $$", -1, syscall.SIGTERM},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := Command(t.Context(), env.self, Policy{Tier: TierLandlock, BestEffort: true}, []string{"/bin/sh", "-c", tt.script})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			if rep, err := c.Report(t.Context()); err != nil || !rep.Has(ConfineDescendants) {
				t.Fatalf("report %s: %v, want %s", rep, err, ConfineDescendants)
			}
			err = c.Wait()
			var ee *exec.ExitError
			if tt.code == 0 && err == nil {
				return
			}
			if !errors.As(err, &ee) {
				t.Fatalf("Wait = %v, want the server's end", err)
			}
			ws := ee.Sys().(syscall.WaitStatus)
			if ws.ExitStatus() != tt.code || (tt.signal != 0 && ws.Signal() != tt.signal) {
				t.Errorf("the launcher ended with %v, want exit %d signal %v", ws, tt.code, tt.signal)
			}
		})
	}
}
