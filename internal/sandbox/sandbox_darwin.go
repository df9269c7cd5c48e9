//go:build darwin

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

// ConfineSeatbelt is the macOS Seatbelt profile from [SeatbeltProfile].
const ConfineSeatbelt Confinement = "seatbelt"

// sandboxExec is macOS's Seatbelt front end.
const sandboxExec = "/usr/bin/sandbox-exec"

// A Cmd is a server started under sandbox-exec with the policy's
// Seatbelt profile. Set Cmd's Stdin, Stdout and Stderr before Start.
type Cmd struct {
	Cmd    *exec.Cmd
	rep    Report
	grants []string
}

// LaunchArg is the first argument of the launcher's command line; on macOS
// sandbox-exec is the launcher and this is not used.
const LaunchArg = "__sandbox-launch"

// Command returns the Cmd that runs argv under sandbox-exec with the
// Seatbelt profile of p. Paths are resolved first (Seatbelt matches the
// resolved path: /tmp is /private/tmp). The environment is decided as on
// Linux. Resource limits are not applied on macOS yet, so the report names
// them missing and Start refuses unless p.BestEffort.
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
	profile, err := SeatbeltProfile(p, resolved(home))
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	cmd := exec.CommandContext(ctx, sandboxExec, append([]string{"-p", profile, path}, argv[1:]...)...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	rep := Report{Applied: []Confinement{ConfineSession, ConfineEnvironment, ConfineSeatbelt}}
	for _, c := range []Confinement{ConfineLimits, ConfineCoreDumps} {
		rep.Missing = append(rep.Missing, Missing{c, "not applied on macOS yet"})
	}
	rep.Started = p.BestEffort
	if !rep.Started {
		rep.Error = "required confinements are missing"
	}
	return &Cmd{Cmd: cmd, rep: rep, grants: slices.Concat(p.Exec, p.Read, p.Write)}, nil
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

// Start starts sandbox-exec, or refuses with an [*IncompleteError] when
// the policy requires what macOS does not apply yet.
func (c *Cmd) Start() error {
	if !c.rep.Started {
		return &IncompleteError{Report: c.rep}
	}
	if err := c.Cmd.Start(); err != nil {
		return fmt.Errorf("sandbox: starting %s: %w", sandboxExec, err)
	}
	return nil
}

// Report is what Command applies: the profile, the session and the
// environment (its Tier is TierAuto: macOS has one mechanism).
func (c *Cmd) Report(ctx context.Context) (Report, error) {
	if !c.rep.Started {
		return c.rep, &IncompleteError{Report: c.rep}
	}
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

// Main exits: on macOS sandbox-exec is the launcher.
func Main() {
	fmt.Fprintln(os.Stderr, "mcpwarden sandbox: on macOS the launcher is sandbox-exec")
	os.Exit(126)
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
		s.Missing["seatbelt"] = sandboxExec + " is missing: " + err.Error()
	}
	return s
}

// Grants returns every path the profile grants the server: what it may
// execute (its command's directory included), read and write.
func (c *Cmd) Grants() []string { return c.grants }

// Hide does nothing yet: the Seatbelt profile does not deny files inside
// what it grants, and upstream names each such file in its log.
func (c *Cmd) Hide(paths ...string) {}
