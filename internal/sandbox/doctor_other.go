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

// Doctor reports that this system has no sandbox tier mcpwarden can test.
func Doctor(ctx context.Context, o DoctorOptions) Checkup {
	c := Checkup{Support: Probe(Policy{Disable: o.Disable}),
		Tiers: []TierCheck{{Tier: TierAuto, Error: ErrUnsupported.Error() + ": configure sandbox: off for each server"}}}
	c.settle()
	return c
}

// SelfTestMain exits: there is no self-test on this system.
func SelfTestMain(args []string) int {
	fmt.Fprintln(os.Stderr, "mcpwarden sandbox self-test:", ErrUnsupported)
	return 126
}
