package main

import (
	"path/filepath"
	"testing"
)

// TestAuditProofRunsSmall runs the auditproof measure small, with its
// profile, so that it keeps working between the runs that matter.
func TestAuditProofRunsSmall(t *testing.T) {
	t.Parallel()
	prof := filepath.Join(t.TempDir(), "cpu.prof")
	if err := runAuditProof([]string{"-rounds", "3", "-events", "200", "-rate", "0", "-gib", "0.002", "-cpuprofile", prof}); err != nil {
		t.Fatal(err)
	}
	if fileSize(prof) == 0 {
		t.Error("no CPU profile was written")
	}
}
