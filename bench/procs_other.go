//go:build !unix

package main

import (
	"syscall"
	"time"
)

// procAttr is nil outside Unix: there are no process groups to start a
// child in (Windows would need a Job object), so stopping a child is best
// effort and what it started itself is left to exit on its own. The
// harness measures on Linux (it reads /proc); this only lets it build.
func procAttr() *syscall.SysProcAttr { return nil }

// terminateGroup kills the process: there is no SIGTERM outside Unix.
func (p *proc) terminateGroup() { p.killGroup() }

// killGroup kills the process, if it has not exited.
func (p *proc) killGroup() { _ = p.cmd.Process.Kill() }

// selfCPU is the process's CPU time; unknown (0) here.
func selfCPU() time.Duration { return 0 }
