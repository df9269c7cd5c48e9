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

// Whatever argument list reaches the macOS launcher, it executes nothing
// but sandbox-exec with a profile and a command, and the limits it reads
// are never zero (zero would be "none allowed", or mistaken for unlimited).
func FuzzDarwinLauncherRunsOnlySandboxExec(f *testing.F) {
	f.Add(`{"processes":64}`, sandboxExec, "-p", "(version 1)", "/bin/id")
	f.Add("{}", "/bin/sh", "-p", "x", "/bin/id")
	f.Add("null", sandboxExec, "-p", "", "")
	f.Fuzz(func(t *testing.T, limits, prog, flag, profile, cmd string) {
		l, argv, err := parseDarwinLauncherArgs([]string{limits, prog, flag, profile, cmd})
		if err != nil {
			return
		}
		if len(argv) < 4 || argv[0] != sandboxExec || argv[1] != "-p" {
			t.Fatalf("the launcher would execute %q", argv)
		}
		if l.Processes == 0 || l.MemoryBytes == 0 || l.OpenFiles == 0 || l.FileSizeBytes == 0 {
			t.Fatalf("limits %+v have a zero", l)
		}
	})
}
