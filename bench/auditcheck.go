package main

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/mcpwarden/mcpwarden/audit"
)

// verifyAudit stops every process the bench started (mcpwarden closes its
// audit log on SIGTERM; the stdio ones ended with their clients) and
// verifies the hash chain of every mcpwarden audit log the run wrote, as
// `mcpwarden audit verify` does: the load must leave the logs whole.
func (b *bench) verifyAudit() extra {
	for _, p := range slices.Backward(b.procs) {
		p.Stop()
	}
	logs, err := filepath.Glob(filepath.Join(b.tmp, "warden-*-audit.jsonl"))
	if err == nil && len(logs) == 0 {
		err = fmt.Errorf("no audit log in %s", b.tmp)
	}
	lines := 0
	for _, path := range logs {
		if err != nil {
			break
		}
		var n int
		n, err = audit.Verify(path)
		if err != nil {
			err = fmt.Errorf("%s: %w", filepath.Base(path), err)
		}
		lines += n
	}
	what := "audit logs verified after the load"
	if err != nil {
		return extra{What: what, Value: "FAILED", Note: err.Error()}
	}
	return extra{What: what, Value: fmt.Sprintf("%d logs, %d lines", len(logs), lines), Note: "every chain verifies"}
}
