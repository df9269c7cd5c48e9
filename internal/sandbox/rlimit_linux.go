package sandbox

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// An rlimit is one resource limit to set.
type rlimit struct {
	res  int
	v    uint64
	name string
}

// limitsFor are the limits of l in tier t. In tier landlock it counts the
// user's tasks, so it must run before Landlock hides /proc.
func limitsFor(t Tier, l Limits) []rlimit {
	procs := l.Processes
	if t != TierNamespaces {
		// Outside a user namespace of its own the kernel counts every task
		// of the user against RLIMIT_NPROC: allow what runs now plus the
		// sandbox's share.
		procs += userTasks(os.Getuid())
	}
	return []rlimit{
		{unix.RLIMIT_NPROC, procs, "processes"},
		{unix.RLIMIT_DATA, l.MemoryBytes, "memory"},
		{unix.RLIMIT_NOFILE, l.OpenFiles, "open files"},
		{unix.RLIMIT_FSIZE, l.FileSizeBytes, "file size"},
		{unix.RLIMIT_CORE, 0, "core dumps"},
	}
}

// setLimits sets soft and hard limits, so the server cannot raise them. The
// launcher sets them last, so that its own Go runtime (a race-detector
// build's shadow memory, say) is not held to the server's budget.
func setLimits(limits []rlimit) error {
	for _, lim := range limits {
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

// userTasks counts the tasks (threads included, as RLIMIT_NPROC does) of
// the user uid. It reads the status only of processes whose /proc
// directory the user owns: reading every process's took tens of
// milliseconds on a busy machine.
func userTasks(uid int) uint64 {
	names, _ := os.ReadDir("/proc")
	var n uint64
	for _, d := range names {
		name := d.Name()
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		var st unix.Stat_t
		if unix.Stat("/proc/"+name, &st) != nil || int(st.Uid) != uid {
			continue
		}
		n += threads("/proc/" + name + "/status")
	}
	return n
}

// threads reads the Threads line of a /proc status file; 1 when it cannot.
func threads(status string) uint64 {
	b, err := os.ReadFile(status)
	if err != nil {
		return 1
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("Threads:")); ok {
			if t, err := strconv.ParseUint(string(bytes.TrimSpace(rest)), 10, 64); err == nil {
				return t
			}
		}
	}
	return 1
}
