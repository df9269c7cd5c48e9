//go:build !linux

package sandbox

import (
	"context"
	"fmt"
	"os"
)

// DoctorOptions are how [Doctor] runs.
type DoctorOptions struct {
	// Launcher is mcpwarden's path.
	Launcher string
	// Disable treats these kernel features as missing.
	Disable []Feature
}

// Doctor probes what it can and reports that the self-test runs on Linux
// only, so the checkup is not OK.
func Doctor(ctx context.Context, o DoctorOptions) Checkup {
	c := Checkup{Support: Probe(Policy{Disable: o.Disable}),
		Tiers: []TierCheck{{Tier: TierAuto, Error: "the sandbox self-test runs on Linux only"}}}
	c.settle()
	return c
}

// SelfTestMain exits: there is no self-test on this system.
func SelfTestMain(args []string) int {
	fmt.Fprintln(os.Stderr, "mcpwarden sandbox self-test:", ErrUnsupported)
	return 126
}
