//go:build darwin

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

// A Cmd is a server started under sandbox-exec with the policy's
// Seatbelt profile. Set Cmd's Stdin, Stdout and Stderr before Start.
type Cmd struct {
	Cmd    *exec.Cmd
	rep    Report
	grants []string
	// The profile's inputs, for Start to build it with what Hide added.
	policy         Policy
	realHome, path string
	args           []string
}

// LaunchArg is the first argument of the launcher's command line: the
// hidden subcommand that calls [Main], which sets the limits and executes
// sandbox-exec.
const LaunchArg = "__sandbox-launch"

// Command returns the Cmd that runs argv under sandbox-exec with the
// Seatbelt profile of p, through launcher (mcpwarden), which sets p's
// resource limits first (see [Main]). Paths are resolved first (Seatbelt
// matches the resolved path: /tmp is /private/tmp). The environment is
// decided as on Linux.
func Command(ctx context.Context, launcher string, p Policy, argv []string) (*Cmd, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("sandbox: no command to run")
	}
	env := serverEnv(os.Environ(), p)
	path, err := lookPath(argv[0], env)
	if err != nil {
		return nil, err
	}
	path = resolved(path)
	p.Exec = append(resolvedAll(p.Exec), filepath.Dir(path))
	p.Read, p.Write = resolvedAll(p.Read), resolvedAll(p.Write)
	p.Home, p.TmpDir = resolved(p.Home), resolved(p.TmpDir)
	home, _ := os.UserHomeDir()
	// Made here to say at once what it cannot quote; Start makes it again.
	if _, err := SeatbeltProfile(p, resolved(home)); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	cmd := exec.CommandContext(ctx, launcher)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	rep := Report{Network: p.Network, Applied: []Confinement{ConfineSession, ConfineEnvironment, ConfineSeatbelt, ConfineLimits, ConfineCoreDumps}, Started: true}
	return &Cmd{Cmd: cmd, rep: rep, grants: slices.Concat(p.Exec, p.Read, p.Write),
		policy: p, realHome: resolved(home), path: path, args: argv[1:]}, nil
}

func resolved(p string) string {
	if p == "" {
		return ""
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

func resolvedAll(ps []string) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, resolved(p))
	}
	return out
}

// Start starts the launcher, which sets the limits and executes
// sandbox-exec.
func (c *Cmd) Start() error {
	profile, err := SeatbeltProfile(c.policy, c.realHome)
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	args, err := darwinLauncherArgs(c.policy.Limits, profile, c.path, c.args)
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	c.Cmd.Args = append(c.Cmd.Args[:1:1], args...)
	if err := c.Cmd.Start(); err != nil {
		return fmt.Errorf("sandbox: starting the launcher for %s: %w", sandboxExec, err)
	}
	return nil
}

// Report is what Command applies: the profile, the session, the
// environment and the limits (its Tier is TierAuto: macOS has one
// mechanism). The launcher exits non-zero, saying why on the server's
// stderr, when it could not set a limit.
func (c *Cmd) Report(ctx context.Context) (Report, error) {
	return c.rep, nil
}

// Wait waits for the server, then kills what is left of its process group.
func (c *Cmd) Wait() error {
	err := c.Cmd.Wait()
	if c.Cmd.Process != nil {
		syscall.Kill(-c.Cmd.Process.Pid, syscall.SIGKILL)
	}
	return err
}

// Probe reports whether sandbox-exec is there; the Linux features are
// missing by nature.
func Probe(p Policy) Support {
	s := Support{Missing: map[Feature]string{
		FeatureUserNamespaces: "macOS has no user namespaces; Seatbelt confines instead",
		FeatureLandlock:       "macOS has no Landlock; Seatbelt confines instead",
		FeatureSeccomp:        "macOS has no seccomp; Seatbelt confines instead",
	}}
	if _, err := os.Stat(sandboxExec); err != nil {
		s.Missing[FeatureSeatbelt] = sandboxExec + " is missing: " + err.Error()
	}
	return s
}

// Grants returns every path the profile grants the server: what it may
// execute (its command's directory included), read and write.
func (c *Cmd) Grants() []string { return c.grants }

// ProxyListener returns nil: macOS has no egress proxy yet, and a server
// with network: proxy reaches nothing (its profile allows no network).
func (c *Cmd) ProxyListener() net.Listener { return nil }

// Hide adds to the policy's Hide: mcpwarden's own files that [Cmd.Grants]
// reach, which the profile denies after what it grants. Call it before
// Start.
func (c *Cmd) Hide(paths ...string) {
	for _, p := range paths {
		c.policy.Hide = append(c.policy.Hide, resolved(p))
	}
	if len(c.policy.Hide) > 0 && !c.rep.Has(ConfineMaskOwnFiles) {
		c.rep.Applied = append(c.rep.Applied, ConfineMaskOwnFiles)
	}
	c.rep.Masked = slices.Clone(c.policy.Hide)
}

// ReadOnly adds to the policy's ReadOnly: self-protection's files that a
// writable grant reaches, which the profile denies writing after what it
// grants. Call it before Start.
func (c *Cmd) ReadOnly(paths ...string) {
	for _, p := range paths {
		c.policy.ReadOnly = append(c.policy.ReadOnly, resolved(p))
	}
	if len(c.policy.ReadOnly) > 0 && !c.rep.Has(ConfineReadOnlyOwnFiles) {
		c.rep.Applied = append(c.rep.Applied, ConfineReadOnlyOwnFiles)
	}
	c.rep.ReadOnly = slices.Clone(c.policy.ReadOnly)
}
