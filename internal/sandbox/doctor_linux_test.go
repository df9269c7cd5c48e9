package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// doctorArg makes the test binary run [Doctor] as mcpwarden doctor does,
// with itself as the launcher and the self-test, the features named in
// its arguments disabled; it prints the checkup as JSON. With a terminal
// on fd 3 it first makes that its controlling terminal.
const doctorArg = "__test-doctor"

func doctorMain(args []string) int {
	if os.Getenv("WARDEN_TTY") == "1" {
		if _, err := unix.Setsid(); err != nil {
			fmt.Fprintln(os.Stderr, "doctor setsid:", err)
			return 3
		}
		if err := unix.IoctlSetInt(3, unix.TIOCSCTTY, 0); err != nil {
			fmt.Fprintln(os.Stderr, "doctor TIOCSCTTY:", err)
			return 3
		}
		syscall.CloseOnExec(3)
	}
	o := DoctorOptions{Launcher: env0()}
	for _, a := range args {
		f, err := ParseFeature(a)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		o.Disable = append(o.Disable, f)
	}
	c := Doctor(context.Background(), o)
	json.NewEncoder(os.Stdout).Encode(c)
	c.WriteText(os.Stderr)
	if !c.OK {
		return 1
	}
	return 0
}

// doctor runs the doctor as the unprivileged user and returns its
// checkup and exit code.
func doctor(t *testing.T, tty *os.File, disable ...string) (Checkup, int) {
	t.Helper()
	needUser(t)
	cmd := exec.Command(env.self, append([]string{doctorArg}, disable...)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + env.dir, "GORACE=atexit_sleep_ms=0"}
	cmd.Dir = env.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: env.cred}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if tty != nil {
		cmd.Env = append(cmd.Env, "WARDEN_TTY=1")
		cmd.ExtraFiles = []*os.File{tty}
	}
	out, _ := cmd.Output() // the exit code and the checkup say what went wrong
	code := cmd.ProcessState.ExitCode()
	var c Checkup
	if jerr := json.Unmarshal(out, &c); jerr != nil {
		t.Fatalf("doctor printed no checkup (%v, exit %d): %s; stderr: %s", jerr, code, out, stderr.String())
	}
	t.Logf("doctor, exit %d:\n%s", code, stderr.String())
	return c, code
}

// outcomes maps each attempt to its outcome in the tier.
func outcomes(t *testing.T, c Checkup, tier Tier) map[Attempt]Outcome {
	t.Helper()
	for _, tc := range c.Tiers {
		if tc.Tier == tier {
			m := map[Attempt]Outcome{}
			for _, r := range tc.Results {
				m[r.Attempt] = r.Outcome
			}
			return m
		}
	}
	t.Fatalf("doctor did not try tier %s", tier)
	return nil
}

// On this machine both tiers run, and every attempt that escapes without
// the sandbox is blocked in each.
func TestDoctorFindsEverythingBlockedInBothTiers(t *testing.T) {
	t.Parallel()
	c, code := doctor(t, nil)
	if code != 0 || !c.OK {
		t.Fatalf("doctor exited %d, ok %v", code, c.OK)
	}
	for _, tier := range []Tier{TierNamespaces, TierLandlock} {
		got := outcomes(t, c, tier)
		if len(got) != len(Attempts) {
			t.Fatalf("tier %s: %d results, want %d", tier, len(got), len(Attempts))
		}
		for _, a := range Attempts {
			if a == AttemptTIOCSTI {
				continue // no controlling terminal here: see the test with one
			}
			if got[a] != Blocked {
				t.Errorf("tier %s: %s is %s, want blocked", tier, a, got[a])
			}
		}
	}
}

// With a controlling terminal the attempt is real (it works without the
// sandbox), and the sandbox blocks it.
func TestDoctorBlocksTIOCSTIWhenMcpwardenHasATerminal(t *testing.T) {
	t.Parallel()
	master, slave := openPTY(t)
	defer master.Close()
	go func() {
		b := make([]byte, 4096)
		for {
			if _, err := master.Read(b); err != nil {
				return
			}
		}
	}()
	c, code := doctor(t, slave)
	slave.Close()
	if code != 0 {
		t.Fatalf("doctor exited %d", code)
	}
	for _, tier := range []Tier{TierNamespaces, TierLandlock} {
		if got := outcomes(t, c, tier)[AttemptTIOCSTI]; got != Blocked {
			t.Errorf("tier %s: TIOCSTI is %s, want blocked", tier, got)
		}
	}
}

// A kernel without a feature is simulated through Policy.Disable: doctor
// names it missing, shows what then escapes, and exits non-zero.
func TestDoctorReportsAMissingFeatureAndFails(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		disable    []string
		missing    Feature
		notApplied Confinement
		escapes    map[Tier]Attempt // an attempt that is then NOT BLOCKED
	}{
		{name: "without Landlock the files are open", disable: []string{"landlock"}, missing: FeatureLandlock,
			notApplied: ConfineLandlockFS, escapes: map[Tier]Attempt{TierNamespaces: AttemptReadHome, TierLandlock: AttemptReadHome}},
		{name: "without seccomp UDP goes out in tier landlock", disable: []string{"seccomp"}, missing: FeatureSeccomp,
			notApplied: ConfineSeccomp, escapes: map[Tier]Attempt{TierLandlock: AttemptUDPSend}},
		{name: "without scoping mcpwarden can be signalled in tier landlock", disable: []string{"landlock_scope"}, missing: FeatureLandlockScope,
			notApplied: ConfineScopeSignal, escapes: map[Tier]Attempt{TierLandlock: AttemptSignalParent}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, code := doctor(t, nil, tt.disable...)
			if code == 0 || c.OK {
				t.Fatalf("doctor exited %d, ok %v, with %v disabled", code, c.OK, tt.disable)
			}
			if _, ok := c.Support.Missing[tt.missing]; !ok {
				t.Errorf("the probe does not name %s missing: %v", tt.missing, c.Support.Missing)
			}
			for _, tc := range c.Tiers {
				if tc.Report == nil || !hasMissing(*tc.Report, tt.notApplied) {
					t.Errorf("tier %s does not report %s not applied: %+v", tc.Tier, tt.notApplied, tc.Report)
				}
			}
			for tier, a := range tt.escapes {
				if got := outcomes(t, c, tier)[a]; got != NotBlocked {
					t.Errorf("tier %s: %s is %s, want NOT BLOCKED", tier, a, got)
				}
			}
		})
	}
}

// Without user namespaces doctor says so and tests tier landlock alone,
// which still blocks everything.
func TestDoctorWithoutUserNamespacesTestsTierLandlock(t *testing.T) {
	t.Parallel()
	c, code := doctor(t, nil, "user_namespaces")
	if code != 0 || c.Auto != TierLandlock {
		t.Fatalf("doctor exited %d, auto tier %s", code, c.Auto)
	}
	if c.Tiers[0].Tier != TierNamespaces || c.Tiers[0].Skipped == "" {
		t.Errorf("tier namespaces is not reported unavailable: %+v", c.Tiers[0])
	}
	if got := outcomes(t, c, TierLandlock)[AttemptReadHome]; got != Blocked {
		t.Errorf("tier landlock: %s", got)
	}
}

func hasMissing(r Report, c Confinement) bool {
	for _, m := range r.Missing {
		if m.Confinement == c {
			return true
		}
	}
	return false
}
