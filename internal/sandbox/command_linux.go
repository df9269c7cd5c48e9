package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

// A Cmd is a server started through the launcher. Set Cmd's Stdin, Stdout
// and Stderr (and nothing else of it) before Start; read the [Report] after
// Start; Wait for it as for an exec.Cmd. A Cmd is used by one goroutine.
type Cmd struct {
	// Cmd is the launcher's process; its Path, Args, Env, ExtraFiles and
	// SysProcAttr belong to the sandbox.
	Cmd *exec.Cmd

	sp        spec
	report    *os.File
	reportErr error
	rep       *Report

	// With NetworkProxy: the egress proxy's listener until ProxyListener
	// hands it over, and in TierNamespaces, before the report, the socket
	// the launcher sends it on.
	proxy     net.Listener
	proxySock *os.File
}

// LaunchArg is the first argument of the launcher's command line: the
// hidden subcommand that calls [Main].
const LaunchArg = "__sandbox-launch"

// Command returns the Cmd that runs argv confined by p, through launcher
// (the path of mcpwarden, or of a test binary whose TestMain calls [Main]
// when its first argument is [LaunchArg]). argv[0] is resolved against
// the server's PATH, and its directory becomes readable and executable.
// The server's environment is decided here from mcpwarden's: the
// allowlist, the private HOME and TMPDIR, p.Env and p.Passthrough, never
// MCPWARDEN_*. ctx kills the launcher's whole process group.
func Command(ctx context.Context, launcher string, p Policy, argv []string) (*Cmd, error) {
	return command(ctx, launcher, p, argv, os.Environ())
}

// command is [Command] with mcpwarden's environment given, so doctor can
// plant a variable the server must not see without changing its own.
func command(ctx context.Context, launcher string, p Policy, argv, environ []string) (*Cmd, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("sandbox: no command to run")
	}
	env := serverEnv(environ, p)
	path, err := lookPath(argv[0], env)
	if err != nil {
		return nil, err
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		p.Exec = append(p.Exec, filepath.Dir(real))
	}
	p.Exec = append(p.Exec, filepath.Dir(path))
	c := &Cmd{sp: spec{Policy: p, Tier: p.Tier, Path: path, Argv: argv, Env: env}}
	c.Cmd = launcherCmd(ctx, launcher)
	return c, nil
}

// launcherCmd is the launcher's command; ctx kills its process group.
func launcherCmd(ctx context.Context, launcher string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, launcher, LaunchArg)
	cmd.Env = []string{}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// Grants returns every path the sandbox grants the server: what it may
// execute (its command's directory included, resolved as the launcher
// will resolve it), read and write.
func (c *Cmd) Grants() []string {
	return slices.Concat(c.sp.Policy.Exec, c.sp.Policy.Read, c.sp.Policy.Write)
}

// Hide adds to the policy's Hide: mcpwarden's own files that [Cmd.Grants]
// reach, to be masked (tier namespaces) or reported missing (tier
// landlock). Call it before Start.
func (c *Cmd) Hide(paths ...string) {
	c.sp.Policy.Hide = append(c.sp.Policy.Hide, paths...)
}

// ReadOnly adds to the policy's ReadOnly: self-protection's files that a
// writable grant reaches, to be bound read-only (tier namespaces). Call it
// before Start.
func (c *Cmd) ReadOnly(paths ...string) {
	c.sp.Policy.ReadOnly = append(c.sp.Policy.ReadOnly, paths...)
}

// Start starts the launcher. TierAuto is namespaces when a user namespace
// can be made (Start tries one with a short-lived process first; an
// exec.Cmd starts only once, so a failed start cannot be retried with its
// pipes) and Landlock alone otherwise.
func (c *Cmd) Start() error {
	tier := c.sp.Policy.Tier
	switch {
	case tier == TierNamespaces && c.sp.Policy.disabled(FeatureUserNamespaces):
		return errors.New("sandbox: tier namespaces but user namespaces are disabled by the policy: write tier auto or landlock")
	case tier != TierAuto:
	case c.sp.Policy.disabled(FeatureUserNamespaces) || tryUserNamespace() != nil:
		tier = TierLandlock
	default:
		tier = TierNamespaces
	}
	return c.start(tier)
}

func (c *Cmd) start(tier Tier) error {
	c.sp.Tier = tier
	if tier == TierLandlock {
		// No PID namespace ends the server's descendants with it: a
		// supervisor stays to do that (see supervise).
		c.sp.Supervised = true
		c.Cmd.Args = append(c.Cmd.Args[:2:2], superviseArg)
	}
	launcherEnd, err := c.prepareProxy(tier)
	if err != nil {
		return err
	}
	if launcherEnd != nil {
		defer launcherEnd.Close()
	}
	if err := c.startLauncher(tier, launcherEnd); err != nil {
		c.closeProxy()
		return err
	}
	return nil
}

// startLauncher starts the launcher with the spec on its fd 3, the report
// pipe on 4 and, when not nil, listenerEnd on 5.
func (c *Cmd) startLauncher(tier Tier, listenerEnd *os.File) error {
	b, err := json.Marshal(c.sp)
	if err != nil {
		return fmt.Errorf("sandbox: encoding the spec: %w", err)
	}
	specR, specW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("sandbox: spec pipe: %w", err)
	}
	defer specR.Close()
	repR, repW, err := os.Pipe()
	if err != nil {
		specW.Close()
		return fmt.Errorf("sandbox: report pipe: %w", err)
	}
	defer repW.Close()
	// The spec goes in before the launcher starts; it must fit the pipe.
	if len(b) > 60<<10 {
		specW.Close()
		repR.Close()
		return fmt.Errorf("sandbox: the policy is %d bytes, more than fits the launcher's pipe", len(b))
	}
	_, err = specW.Write(b)
	specW.Close()
	if err != nil {
		repR.Close()
		return fmt.Errorf("sandbox: writing the spec: %w", err)
	}
	c.Cmd.ExtraFiles = []*os.File{specR, repW} // fds 3 and 4
	if listenerEnd != nil {
		c.Cmd.ExtraFiles = append(c.Cmd.ExtraFiles, listenerEnd) // fd 5
	}
	c.Cmd.SysProcAttr = procAttr(tier, c.sp.Policy.Network)
	if err := c.Cmd.Start(); err != nil {
		repR.Close()
		return fmt.Errorf("sandbox: starting the launcher in tier %s: %w", tier, err)
	}
	c.report = repR
	return nil
}

// Report waits for the launcher's report: what it applied before it
// executed the server, or why it did not. It returns an
// [*IncompleteError] when the server was not started for want of a
// required confinement.
func (c *Cmd) Report(ctx context.Context) (Report, error) {
	if c.rep != nil || c.reportErr != nil {
		return c.reportOr()
	}
	if c.report == nil {
		return Report{}, errors.New("sandbox: Report before Start")
	}
	defer c.report.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.report.SetReadDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { c.report.SetReadDeadline(time.Now()) })
	defer stop()
	b, err := io.ReadAll(io.LimitReader(c.report, maxSpec))
	if err != nil {
		c.reportErr = fmt.Errorf("sandbox: reading the launcher's report: %w", err)
		c.closeProxy()
		return c.reportOr()
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		c.reportErr = fmt.Errorf("sandbox: the launcher wrote no report (%q): %w", b, err)
		c.closeProxy()
		return c.reportOr()
	}
	c.rep = &r
	if r.Started {
		c.reportErr = c.receiveListener()
	}
	if !r.Started || c.reportErr != nil {
		c.closeProxy()
	}
	return c.reportOr()
}

func (c *Cmd) reportOr() (Report, error) {
	if c.reportErr != nil {
		return Report{}, c.reportErr
	}
	r := *c.rep
	if !r.Started {
		if len(r.Missing) > 0 {
			return r, &IncompleteError{Report: r}
		}
		return r, fmt.Errorf("sandbox: the launcher did not start the server: %s", r.Error)
	}
	return r, nil
}

// Wait waits for the server to exit, then kills what is left of its
// process group, so no descendant outlives it.
func (c *Cmd) Wait() error {
	err := c.Cmd.Wait()
	if c.Cmd.Process != nil {
		syscall.Kill(-c.Cmd.Process.Pid, syscall.SIGKILL)
	}
	return err
}
