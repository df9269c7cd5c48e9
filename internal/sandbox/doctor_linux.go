package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// DoctorOptions are how [Doctor] runs.
type DoctorOptions struct {
	// Launcher is mcpwarden's path: its hidden subcommands are the
	// launcher ([LaunchArg]) and the self-test ([SelfTestArg]).
	Launcher string
	// Disable treats these kernel features as missing.
	Disable []Feature
}

// doctorVariable is the MCPWARDEN_* variable doctor plants in the
// environment it hands the sandbox; the self-test must not find it.
const doctorVariable = "MCPWARDEN_DOCTOR_CANARY"

// Doctor probes the kernel and runs the self-test: once without the
// sandbox, so that an attempt that fails anyway is "not applicable", then
// in each tier the kernel has, with the confinements the policy gets
// (best effort, so that a missing feature shows what then escapes).
func Doctor(ctx context.Context, o DoctorOptions) (c Checkup) {
	c.Support = Probe(Policy{Disable: o.Disable})
	c.Auto = c.Support.Tier()
	defer c.settle()

	fx, err := newFixture()
	if err != nil {
		c.Tiers = append(c.Tiers, TierCheck{Tier: TierAuto, Error: err.Error()})
		return c
	}
	defer fx.close()

	control, err := fx.run(ctx, o.Launcher)
	if err != nil {
		c.Tiers = append(c.Tiers, TierCheck{Tier: TierAuto, Error: "the self-test does not run even without the sandbox: " + err.Error()})
		return c
	}
	for _, tier := range []Tier{TierNamespaces, TierLandlock} {
		tc := TierCheck{Tier: tier}
		if tier == TierNamespaces && !c.Support.UserNamespaces {
			tc.Skipped = c.Support.Missing[FeatureUserNamespaces]
			c.Tiers = append(c.Tiers, tc)
			continue
		}
		p := fx.policy(tier, o.Disable)
		rep, tries, err := fx.runSandboxed(ctx, o.Launcher, p)
		tc.Report = rep
		if err != nil {
			tc.Error = err.Error()
		}
		tc.Results = judge(control, tries)
		c.Tiers = append(c.Tiers, tc)
	}
	return c
}

// judge turns the sandboxed tries into results, against the control run.
func judge(control, tries []try) []Result {
	byAttempt := map[Attempt]try{}
	for _, t := range control {
		byAttempt[t.Attempt] = t
	}
	var out []Result
	for _, t := range tries {
		r := Result{Attempt: t.Attempt, Detail: t.Detail}
		switch ctl, ok := byAttempt[t.Attempt]; {
		case t.Escaped:
			r.Outcome = NotBlocked
		case !ok || !ctl.Escaped:
			r.Outcome = NotApplicable
			r.Detail = "fails without the sandbox too: " + ctl.Detail
		default:
			r.Outcome = Blocked
		}
		out = append(out, r)
	}
	return out
}

// A fixture is what doctor plants and opens for the self-test: a
// temporary "real home" with a key, a directory outside the sandbox, the
// sandbox's private home and temporary directory, and loopback listeners.
type fixture struct {
	root, secret, outside, home, tmp string
	tcp                              net.Listener
	udp                              net.PacketConn
}

func newFixture() (*fixture, error) {
	root, err := os.MkdirTemp("", "mcpwarden-doctor-")
	if err != nil {
		return nil, fmt.Errorf("making doctor's temporary directory: %w", err)
	}
	fx := &fixture{root: root, secret: filepath.Join(root, "home", ".ssh", "id_ed25519"),
		outside: filepath.Join(root, "outside"), home: filepath.Join(root, "sandbox-home"), tmp: filepath.Join(root, "sandbox-tmp")}
	err = os.MkdirAll(filepath.Dir(fx.secret), 0o700)
	for _, d := range []string{fx.outside, fx.home, fx.tmp} {
		if err == nil {
			err = os.Mkdir(d, 0o700)
		}
	}
	if err == nil {
		err = os.WriteFile(fx.secret, []byte("-----BEGIN OPENSSH PRIVATE KEY-----\ndoctor\n"), 0o600)
	}
	if err == nil {
		fx.tcp, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err == nil {
		fx.udp, err = net.ListenPacket("udp", "127.0.0.1:0")
	}
	if err != nil {
		fx.close()
		return nil, fmt.Errorf("planting doctor's files and listeners: %w", err)
	}
	go func() {
		for {
			c, err := fx.tcp.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return fx, nil
}

func (fx *fixture) close() {
	if fx.tcp != nil {
		fx.tcp.Close()
	}
	if fx.udp != nil {
		fx.udp.Close()
	}
	os.RemoveAll(fx.root)
}

// policy is the sandbox a server gets by default, in tier t: no network,
// a private home and temporary directory, nothing else writable.
func (fx *fixture) policy(t Tier, disable []Feature) Policy {
	return Policy{Tier: t, Home: fx.home, TmpDir: fx.tmp, BestEffort: true, Disable: disable}
}

func (fx *fixture) argv(launcher string) []string {
	b, _ := json.Marshal(selfTestArgs{Secret: fx.secret, Outside: fx.outside, TCP: fx.tcp.Addr().String(),
		UDP: fx.udp.LocalAddr().String(), Parent: os.Getpid(), Variable: doctorVariable, DropDir: fx.tmp, TimeoutMS: 2000})
	return []string{launcher, SelfTestArg, string(b)}
}

// environ is doctor's environment with the planted variable.
func environ() []string { return append(os.Environ(), doctorVariable+"=planted-by-doctor") }

// run runs the self-test as mcpwarden without a sandbox would: with its
// whole environment.
func (fx *fixture) run(ctx context.Context, launcher string) ([]try, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	argv := fx.argv(launcher)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(environ(), "HOME="+fx.home, "TMPDIR="+fx.tmp)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, exitErr(err, stderr.String())
	}
	return decodeTries(out)
}

// runSandboxed runs the self-test through the launcher under p.
func (fx *fixture) runSandboxed(ctx context.Context, launcher string, p Policy) (*Report, []try, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, err := command(ctx, launcher, p, fx.argv(launcher), environ())
	if err != nil {
		return nil, nil, err
	}
	var stdout, stderr strings.Builder
	c.Cmd.Stdout, c.Cmd.Stderr = &stdout, &stderr
	if err := c.Start(); err != nil {
		return nil, nil, err
	}
	rep, rerr := c.Report(ctx)
	werr := c.Wait()
	var repp *Report
	if rerr == nil || rep.Tier != TierAuto {
		repp = &rep
	}
	switch {
	case rerr != nil:
		return repp, nil, rerr
	case werr != nil:
		return repp, nil, fmt.Errorf("the self-test failed in the sandbox: %w", exitErr(werr, stderr.String()))
	}
	tries, err := decodeTries([]byte(stdout.String()))
	return repp, tries, err
}

func decodeTries(b []byte) ([]try, error) {
	var tries []try
	if err := json.Unmarshal(b, &tries); err != nil {
		return nil, fmt.Errorf("reading the self-test's results (%q): %w", b, err)
	}
	return tries, nil
}
