//go:build !unix

package upstream

import "os"

// alive reports whether pid is a running process: outside Unix, whether
// it can still be found.
func alive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}
