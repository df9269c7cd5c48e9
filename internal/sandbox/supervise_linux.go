package sandbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// superviseArg follows [LaunchArg] on the command line of a launcher in
// tier landlock: it runs [supervise], which starts the launcher proper as
// its child.
const superviseArg = "supervise"

// supervise is the launcher's first stage in tier landlock, where no PID
// namespace ends every descendant with the server. It is mcpwarden's own
// code, unconfined and running nothing of the server's, and stays while
// the server runs: a child subreaper (every orphan of the server becomes
// its child) that holds none of the server's descriptors. When the server
// exits it kills what is left of its process group (the sandbox's seccomp
// filter keeps every descendant in it), reaps it, and exits as the server
// did. When mcpwarden dies, even by SIGKILL, its parent-death signal is
// SIGTERM, and it does the same at once.
func supervise() int {
	parent := os.Getppid()
	// Set up before the switch from SIGKILL (mcpwarden's choice, which
	// leaves no time to clean up) to SIGTERM, so no signal is lost.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	for _, step := range []struct {
		what string
		op   int
		arg  uintptr
	}{
		{"making the supervisor a subreaper", unix.PR_SET_CHILD_SUBREAPER, 1},
		{"keeping the supervisor's memory private", unix.PR_SET_DUMPABLE, 0},
		{"asking for SIGTERM when mcpwarden dies", unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM)},
	} {
		if err := unix.Prctl(step.op, step.arg, 0, 0, 0); err != nil {
			return supervisorFailed(fmt.Errorf("%s: %w", step.what, err))
		}
	}
	if os.Getppid() != parent {
		return 1 // mcpwarden is gone; nothing was started
	}
	if unix.Getpgrp() != os.Getpid() {
		// What it kills at the end is its process group: it must be the
		// sandbox's own (mcpwarden starts the launcher in a new session).
		return supervisorFailed(fmt.Errorf("the supervisor does not lead its process group (%d)", unix.Getpgrp()))
	}
	// Its parent-death signal is tied to this thread, which Main locked.
	pid, err := syscall.ForkExec("/proc/self/exe", []string{os.Args[0], LaunchArg}, &syscall.ProcAttr{
		Env:   []string{},
		Files: []uintptr{0, 1, 2, specFD, reportFD},
		Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		return supervisorFailed(fmt.Errorf("starting the launcher under its supervisor: %w", err))
	}
	// The server's pipes, spec and report are its own now: a supervisor
	// holding them would keep mcpwarden from seeing them close.
	unix.Close(specFD)
	unix.Close(reportFD)
	if null, err := unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0); err == nil {
		for fd := range 3 {
			unix.Dup3(null, fd, 0)
		}
		unix.Close(null)
	}

	exited := make(chan unix.WaitStatus, 1)
	go reapAll(pid, exited)
	for {
		select {
		case ws := <-exited:
			killGroup()
			return exitAs(ws)
		case <-sigs:
			// A SIGTERM to the group (mcpwarden stopping the server)
			// reaches the server too; the supervisor waits for it. One
			// that comes with a new parent is mcpwarden's death.
			if os.Getppid() != parent {
				killGroup()
				return 128 + int(syscall.SIGTERM)
			}
		}
	}
}

// supervisorFailed reports err as the launcher's report, for mcpwarden to
// read, and returns the launcher's failing status.
func supervisorFailed(err error) int {
	if b, jerr := json.Marshal(Report{Tier: TierLandlock, Error: err.Error()}); jerr == nil {
		writeReport(b)
	}
	fmt.Fprintf(os.Stderr, "mcpwarden sandbox: %v\n", err)
	return 126
}

// reapAll reaps every child (the server, and each orphan that became the
// supervisor's) and sends the server's status once.
func reapAll(server int, exited chan<- unix.WaitStatus) {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return // no child left
		}
		if pid == server {
			exited <- ws
		}
	}
}

// killGroup kills every other process of the supervisor's process group,
// until none is left (one may be forking while it runs), and gives the
// reaper a moment to collect them.
func killGroup() {
	self := os.Getpid()
	for range 50 {
		if killOthers(self) == 0 {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// killOthers sends SIGKILL to each live process whose process group is
// self's, but self, and returns how many it found.
func killOthers(self int) int {
	names, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	group := []byte(strconv.Itoa(self))
	n := 0
	for _, d := range names {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid == self {
			continue
		}
		b, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		if err != nil {
			continue
		}
		// After "(comm)": state ppid pgrp …
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) < 3 || !bytes.Equal(f[2], group) || string(f[0]) == "Z" {
			continue
		}
		syscall.Kill(pid, syscall.SIGKILL)
		n++
	}
	return n
}

// exitAs ends the supervisor as the server ended: with its exit status,
// or by its signal.
func exitAs(ws unix.WaitStatus) int {
	if ws.Signaled() {
		sig := ws.Signal()
		signal.Reset(sig)
		syscall.Kill(os.Getpid(), sig)
		time.Sleep(time.Second) // the signal ends it; a blocked one does not
		return 128 + int(sig)
	}
	return ws.ExitStatus()
}
