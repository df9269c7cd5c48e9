//go:build !unix

package audit

import "os"

// lockFile does nothing where flock is not available: there, keeping one
// writer per log is up to the operator.
func lockFile(*os.File) error { return nil }
