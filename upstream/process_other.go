//go:build !unix

package upstream

import (
	"errors"
	"os"
)

// terminateGroup kills the child: outside Unix there is no SIGTERM to
// send, and no process group (see procAttr), so this is best effort — what
// the child started itself is left to exit when its pipes close.
func (p *process) terminateGroup() { p.killGroup() }

// killGroup kills the child, if it has not exited.
func (p *process) killGroup() {
	err := p.cmd.Process.Kill()
	if err != nil && !errors.Is(err, os.ErrProcessDone) {
		p.logger.Debug("killing upstream process", "pid", p.cmd.Process.Pid, "err", err)
	}
}

// stopRequested is false outside Unix: a process there is not ended by a
// signal that another process sent.
func stopRequested(*os.ProcessState) bool { return false }

// stoppedBySignal is false outside Unix, where stop kills a child without
// a signal.
func stoppedBySignal(*os.ProcessState) bool { return false }
