//go:build !unix

package e2e

import (
	"os"
	"syscall"
)

// groupAttr is nil outside Unix, which has no process groups: these
// tests signal mcpwarden as a Unix client or service manager would, and
// run on Unix; this only lets the package build and be vetted elsewhere.
func groupAttr() *syscall.SysProcAttr { return nil }

// killGroup kills the process pid alone.
func killGroup(pid int) error { return signalPID(pid, syscall.SIGKILL) }

// signalPID sends sig to the process pid, as far as the OS can (Windows
// only kills).
func signalPID(pid int, sig syscall.Signal) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Signal(sig)
}
