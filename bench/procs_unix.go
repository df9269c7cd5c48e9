//go:build unix

package main

import "syscall"

// procAttr starts a child in a process group of its own.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// terminateGroup sends SIGTERM to the process's group.
func (p *proc) terminateGroup() { _ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM) }

// killGroup sends SIGKILL to the process's group.
func (p *proc) killGroup() { _ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL) }
