//go:build unix

package main

import (
	"syscall"
	"time"
)

// procAttr starts a child in a process group of its own.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// terminateGroup sends SIGTERM to the process's group.
func (p *proc) terminateGroup() { _ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM) }

// killGroup sends SIGKILL to the process's group.
func (p *proc) killGroup() { _ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL) }

// selfCPU is the process's user and system CPU time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
