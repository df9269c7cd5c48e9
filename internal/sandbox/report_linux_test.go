package sandbox

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestReportNamesTierLandlockABIAndEveryConfinement(t *testing.T) {
	t.Parallel()
	abi := landlockABI(Policy{})
	if abi < 6 {
		t.Skipf("the kernel's Landlock ABI is %d; this test wants 6 or later", abi)
	}
	common := []Confinement{ConfineSession, ConfineEnvironment, ConfineNoNewPrivs, ConfineLandlockFS,
		ConfineLandlockNet, ConfineScopeSignal, ConfineScopeAbstract, ConfineSeccomp, ConfineLimits, ConfineCoreDumps, ConfineDescendants}
	for _, m := range tiers {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			s := start(t, w, m, sessionOpts{})
			rep, ok := s.report()
			if !ok {
				t.Fatalf("no report; warden stderr: %s", s.stderr)
			}
			want := common
			if m == nsTier {
				want = slices.Concat([]Confinement{ConfineUserNamespace, ConfinePIDNamespace, ConfineNetNamespace,
					ConfineIPCNamespace, ConfineMountNamespace}, common[:3], []Confinement{ConfineNoExecWritable}, common[3:])
			}
			if rep.Tier != m.tier || rep.LandlockABI != abi || !rep.Started || len(rep.Missing) > 0 || !slices.Equal(rep.Applied, want) {
				t.Errorf("report %s\nwant tier %s, ABI %d, applied %v, nothing missing", rep, m.tier, abi, want)
			}
			t.Logf("%s", rep)
		})
	}
}

// A kernel without Landlock is simulated by the policy, not by a mock: the
// launcher asks the kernel for nothing it was told is missing.
func TestSandboxRefusesServerWhenLandlockIsMissing(t *testing.T) {
	t.Parallel()
	for _, m := range tiers {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			p := w.policy(m)
			p.Disable = []Feature{FeatureLandlock}
			rep, err := runOnce(t, w, p)
			var inc *IncompleteError
			if !errors.As(err, &inc) {
				t.Fatalf("err = %v, want an IncompleteError", err)
			}
			if rep.Started || !missingHas(rep, ConfineLandlockFS) || !strings.Contains(err.Error(), "landlock_fs") {
				t.Errorf("report %s; error %v", rep, err)
			}
		})
	}
}

func TestSandboxRefusesServerWhenSeccompIsMissing(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.policy(llTier)
	p.Disable = []Feature{FeatureSeccomp}
	rep, err := runOnce(t, w, p)
	if err == nil || rep.Started || !missingHas(rep, ConfineSeccomp) {
		t.Errorf("report %s; error %v", rep, err)
	}
}

func TestSandboxBestEffortStartsAndSaysWhatIsMissing(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.policy(llTier)
	p.Disable = []Feature{FeatureLandlockScope}
	p.BestEffort = true
	rep, err := runOnce(t, w, p)
	if err != nil || !rep.Started || !missingHas(rep, ConfineScopeSignal) || rep.Has(ConfineScopeSignal) || !rep.Has(ConfineLandlockFS) {
		t.Errorf("report %s; error %v", rep, err)
	}
}

func TestTierNamespacesIsRefusedWhenUserNamespacesAreMissing(t *testing.T) {
	t.Parallel()
	p := Policy{Tier: TierNamespaces, Disable: []Feature{FeatureUserNamespaces}}
	c, err := Command(t.Context(), env.self, p, []string{"/usr/bin/true"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err == nil {
		c.Wait()
		t.Fatal("started in tier namespaces without user namespaces")
	}
}

func TestTierAutoFallsBackToLandlockWhenUserNamespacesAreMissing(t *testing.T) {
	t.Parallel()
	needUser(t)
	w := newWorld(t)
	p := w.policy(mode{tier: TierAuto})
	p.Disable = []Feature{FeatureUserNamespaces}
	rep, err := runOnce(t, w, p)
	if err != nil || rep.Tier != TierLandlock || !rep.Started {
		t.Errorf("report %s; error %v", rep, err)
	}
}

func TestTierAutoIsNamespacesWhenTheKernelAllowsThem(t *testing.T) {
	t.Parallel()
	needUser(t)
	if !Probe(Policy{}).UserNamespaces {
		t.Skip("this kernel refuses unprivileged user namespaces")
	}
	w := newWorld(t)
	rep, err := runOnce(t, w, w.policy(mode{tier: TierAuto}))
	if err != nil || rep.Tier != TierNamespaces || !rep.Started {
		t.Errorf("report %s; error %v", rep, err)
	}
}

func TestProbeSaysWhatIsMissing(t *testing.T) {
	t.Parallel()
	got := Probe(Policy{Disable: []Feature{FeatureLandlock, FeatureUserNamespaces}})
	if got.LandlockABI != 0 || got.UserNamespaces || got.Tier() != TierLandlock {
		t.Errorf("Probe with Landlock and user namespaces disabled = %+v", got)
	}
	for _, f := range []Feature{FeatureLandlock, FeatureUserNamespaces, FeatureLandlockNet, FeatureLandlockScope} {
		if got.Missing[f] == "" {
			t.Errorf("Probe does not say %s is missing: %+v", f, got.Missing)
		}
	}
	all := Probe(Policy{})
	t.Logf("this kernel: %+v", all)
	if !all.Seccomp {
		t.Errorf("Probe says seccomp is missing: %+v", all)
	}
}

// runOnce runs /usr/bin/true under p as the unprivileged user's warden
// would, and returns the report.
func runOnce(t *testing.T, w world, p Policy) (Report, error) {
	t.Helper()
	needUser(t)
	if env.cred != nil {
		// Command runs in this (root) process: run the warden instead.
		s := start(t, w, mode{"once", p.Tier}, sessionOpts{policy: &p, argv: []string{env.evil}, noInit: true})
		s.stop()
		rep, ok := s.report()
		if !ok {
			t.Fatalf("no report; warden stderr: %s", s.stderr)
		}
		return rep, reportErr(rep)
	}
	c, err := Command(t.Context(), env.self, p, []string{"/usr/bin/true"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Wait()
	return c.Report(t.Context())
}

func reportErr(r Report) error {
	c := Cmd{rep: &r}
	_, err := c.reportOr()
	return err
}

func missingHas(r Report, c Confinement) bool {
	for _, m := range r.Missing {
		if m.Confinement == c {
			return true
		}
	}
	return false
}
