//go:build !unix

package approvals

import "os/exec"

// killGroup leaves cmd as it is: without process groups, cancellation
// kills the program only.
func killGroup(*exec.Cmd) {}
