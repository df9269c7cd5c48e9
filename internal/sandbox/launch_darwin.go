//go:build darwin

package sandbox

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Main is the launcher on macOS: it sets the resource limits it is given
// (see darwinLauncherArgs) and executes sandbox-exec, which applies the
// Seatbelt profile and executes the server; the limits stay across both
// execs. It returns only by exiting non-zero.
func Main() {
	l, argv, err := parseDarwinLauncherArgs(os.Args[2:])
	if err == nil {
		err = setDarwinLimits(l)
	}
	if err == nil {
		err = syscall.Exec(argv[0], argv, os.Environ())
	}
	fmt.Fprintf(os.Stderr, "mcpwarden sandbox: %v\n", err)
	os.Exit(126)
}

// setDarwinLimits sets soft and hard limits, so the server cannot raise
// them. macOS counts every process of the user against RLIMIT_NPROC, so
// the limit is the user's current count plus the sandbox's share, as in
// Linux's tier landlock.
func setDarwinLimits(l Limits) error {
	procs := l.Processes
	if ps, err := unix.SysctlKinfoProcSlice("kern.proc.uid", os.Getuid()); err == nil {
		procs += uint64(len(ps))
	}
	for _, lim := range []struct {
		res  int
		v    uint64
		name string
	}{
		{unix.RLIMIT_NPROC, procs, "processes"},
		{unix.RLIMIT_DATA, l.MemoryBytes, "memory"},
		{unix.RLIMIT_NOFILE, l.OpenFiles, "open files"},
		{unix.RLIMIT_FSIZE, l.FileSizeBytes, "file size"},
		{unix.RLIMIT_CORE, 0, "core dumps"},
	} {
		var cur unix.Rlimit
		if err := unix.Getrlimit(lim.res, &cur); err != nil {
			return fmt.Errorf("reading the %s limit: %w", lim.name, err)
		}
		v := min(lim.v, cur.Max)
		if err := unix.Setrlimit(lim.res, &unix.Rlimit{Cur: v, Max: v}); err != nil {
			return fmt.Errorf("limiting %s to %d: %w", lim.name, v, err)
		}
	}
	return nil
}
