//go:build !linux && !darwin

package sandbox

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
)

// A Cmd is a sandboxed server; on this system there is none.
type Cmd struct{ Cmd *exec.Cmd }

// LaunchArg is the first argument of the launcher's command line.
const LaunchArg = "__sandbox-launch"

// Command returns ErrUnsupported: this system has no sandbox tier yet.
func Command(ctx context.Context, launcher string, p Policy, argv []string) (*Cmd, error) {
	return nil, ErrUnsupported
}

// Start returns ErrUnsupported.
func (c *Cmd) Start() error { return ErrUnsupported }

// Report returns ErrUnsupported.
func (c *Cmd) Report(ctx context.Context) (Report, error) { return Report{}, ErrUnsupported }

// Wait returns ErrUnsupported.
func (c *Cmd) Wait() error { return ErrUnsupported }

// Main exits: there is no launcher on this system.
func Main() {
	fmt.Fprintln(os.Stderr, "mcpwarden sandbox:", ErrUnsupported)
	os.Exit(126)
}

// Probe reports that nothing is available.
func Probe(p Policy) Support {
	return Support{Missing: map[Feature]string{
		FeatureUserNamespaces: ErrUnsupported.Error(),
		FeatureLandlock:       ErrUnsupported.Error(),
		FeatureSeccomp:        ErrUnsupported.Error(),
	}}
}

// Grants returns nothing: nothing is granted where nothing is confined.
func (c *Cmd) Grants() []string { return nil }

// ProxyListener returns nil: nothing runs sandboxed here.
func (c *Cmd) ProxyListener() net.Listener { return nil }

// Hide does nothing: there is no sandbox here.
func (c *Cmd) Hide(paths ...string) {}

// ReadOnly does nothing: there is no sandbox here.
func (c *Cmd) ReadOnly(paths ...string) {}
