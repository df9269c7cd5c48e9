//go:build unix

package approvals

import (
	"os/exec"
	"syscall"
)

// killGroup runs cmd in its own process group and kills the whole group on
// cancellation, so that a shell script's children die with it.
func killGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
