package sandbox

import (
	"slices"
	"testing"
)

func TestDarwinLauncherReadsTheLimitsAndCommandItWasGiven(t *testing.T) {
	t.Parallel()
	args, err := darwinLauncherArgs(Limits{Processes: 64}, "(version 1)", "/usr/local/bin/server", []string{"--flag", "x"})
	if err != nil {
		t.Fatal(err)
	}
	if args[0] != LaunchArg {
		t.Fatalf("args = %q, want %s first", args, LaunchArg)
	}
	l, argv, err := parseDarwinLauncherArgs(args[1:])
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultLimits
	want.Processes = 64
	if l != want {
		t.Errorf("limits = %+v, want %+v (zero fields at their defaults)", l, want)
	}
	if wantArgv := []string{sandboxExec, "-p", "(version 1)", "/usr/local/bin/server", "--flag", "x"}; !slices.Equal(argv, wantArgv) {
		t.Errorf("argv = %q, want %q", argv, wantArgv)
	}
}

// The launcher sets limits and executes what it is given: it must execute
// nothing but sandbox-exec with a profile, or a confused caller would run
// a server unconfined.
func TestDarwinLauncherRefusesToRunAnythingButSandboxExec(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
	}{
		{"another program", []string{"{}", "/bin/sh", "-p", "x", "/bin/id"}},
		{"sandbox-exec without a profile", []string{"{}", sandboxExec, "-f", "/tmp/profile", "/bin/id"}},
		{"sandbox-exec without a command", []string{"{}", sandboxExec, "-p", "(version 1)"}},
		{"no limits", []string{sandboxExec, "-p", "(version 1)", "/bin/id"}},
		{"limits that are not JSON", []string{"processes=1", sandboxExec, "-p", "(version 1)", "/bin/id"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, argv, err := parseDarwinLauncherArgs(tt.args); err == nil {
				t.Errorf("parse(%q) = %q, want an error", tt.args, argv)
			}
		})
	}
}
