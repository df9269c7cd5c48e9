package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// coldStart times mcpwarden from exec until its HTTP port answers
// initialize, with one upstream that is already running (the bench
// upstream over HTTP), so the upstream's own start is not counted.
func (b *bench) coldStart(ctx context.Context) error {
	var times []time.Duration
	for i := range b.o.coldRuns {
		addr, err := freeAddr()
		if err != nil {
			return err
		}
		spec := configSpec{
			Listen:    addr,
			Servers:   map[string]string{"bench-http": httpServer(b.httpUpURL)},
			Order:     []string{"bench-http"},
			Policy:    genPolicy(10),
			AuditPath: filepath.Join(b.tmp, fmt.Sprintf("cold-%d-audit.jsonl", i)),
		}
		cfg := filepath.Join(b.tmp, fmt.Sprintf("cold-%d.yaml", i))
		if err := os.WriteFile(cfg, []byte(spec.YAML()), 0o600); err != nil {
			return err
		}
		t0 := time.Now()
		p, err := b.start(fmt.Sprintf("cold-%d", i), nil, b.warden, "serve", "--config", cfg)
		if err != nil {
			return err
		}
		err = waitInitialize(ctx, p, "http://"+addr+"/mcp", 30*time.Second)
		d := time.Since(t0)
		p.Stop()
		if err != nil {
			return err
		}
		times = append(times, d)
	}
	slices.Sort(times)
	b.cold = times[len(times)/2]
	b.logf("cold start %v (runs %v)", b.cold, times)
	return nil
}
