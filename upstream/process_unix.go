//go:build unix

package upstream

import (
	"errors"
	"os"
	"syscall"
)

// terminateGroup sends SIGTERM to whatever is left of the child's process
// group.
func (p *process) terminateGroup() { p.signalGroup(syscall.SIGTERM) }

// killGroup sends SIGKILL to whatever is left of the child's process
// group.
func (p *process) killGroup() { p.signalGroup(syscall.SIGKILL) }

// signalGroup sends sig to whatever is left of the child's process group.
func (p *process) signalGroup(sig syscall.Signal) {
	err := syscall.Kill(-p.cmd.Process.Pid, sig)
	if err != nil && !errors.Is(err, syscall.ESRCH) {
		p.logger.Debug("signalling upstream process group", "pid", p.cmd.Process.Pid, "signal", sig, "err", err)
	}
}

// stopRequested reports whether the process of ps was ended by a signal
// that asks a process to stop: SIGTERM, SIGINT or SIGHUP.
func stopRequested(ps *os.ProcessState) bool {
	switch endSignal(ps) {
	case syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP:
		return true
	}
	return false
}

// stoppedBySignal reports whether the process of ps was ended by SIGTERM
// or SIGKILL, as stop ends a child.
func stoppedBySignal(ps *os.ProcessState) bool {
	switch endSignal(ps) {
	case syscall.SIGTERM, syscall.SIGKILL:
		return true
	}
	return false
}

// endSignal is the signal that ended the process of ps, or 0.
func endSignal(ps *os.ProcessState) syscall.Signal {
	if ps == nil {
		return 0
	}
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return 0
	}
	return ws.Signal()
}
