//go:build unix

package e2e

import "syscall"

// groupAttr starts a child in a process group of its own, so that
// killGroup stops what it started too.
func groupAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// killGroup sends SIGKILL to the process group of pid.
func killGroup(pid int) error { return syscall.Kill(-pid, syscall.SIGKILL) }

// signalPID sends sig to the process pid.
func signalPID(pid int, sig syscall.Signal) error { return syscall.Kill(pid, sig) }
