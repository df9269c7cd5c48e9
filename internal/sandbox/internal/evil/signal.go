//go:build linux

package main

import (
	"os/signal"
	"syscall"
)

func signalIgnore() { signal.Ignore(syscall.SIGHUP, syscall.SIGTERM) }
