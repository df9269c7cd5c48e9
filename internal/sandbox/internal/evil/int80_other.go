//go:build linux && !amd64

package main

import "errors"

func i386Socket(_, _ string) (string, error) {
	return "", errors.New("no i386 system call table on this architecture")
}
