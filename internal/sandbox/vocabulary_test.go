package sandbox

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestFeaturesKeepTheirNames pins each feature's name, which the config's
// sandbox.disable, doctor's --disable and the launcher's JSON carry.
func TestFeaturesKeepTheirNames(t *testing.T) {
	t.Parallel()
	want := map[Feature]string{
		FeatureUserNamespaces: "user_namespaces", FeatureLandlock: "landlock", FeatureLandlockNet: "landlock_net",
		FeatureLandlockScope: "landlock_scope", FeatureSeccomp: "seccomp", FeatureMounts: "mounts", FeatureSeatbelt: "seatbelt",
	}
	if len(want) != len(featureNames)-1 {
		t.Fatalf("the test knows %d features, the table names %d", len(want), len(featureNames)-1)
	}
	for f, name := range want {
		var back Feature
		if b, err := f.MarshalText(); err != nil || string(b) != name || back.UnmarshalText(b) != nil || back != f {
			t.Errorf("feature %d: text %q, %v, reads back as %v; want %q", uint8(f), b, err, back, name)
		}
	}
	p := Policy{Disable: []Feature{FeatureSeccomp, FeatureMounts}}
	b, err := json.Marshal(p.Disable)
	if err != nil || string(b) != `["seccomp","mounts"]` {
		t.Errorf("Disable encodes as %s, %v; want the names", b, err)
	}
	var back []Feature
	if err := json.Unmarshal(b, &back); err != nil || !slices.Equal(back, p.Disable) {
		t.Errorf("Disable decodes as %v, %v", back, err)
	}
	m, err := json.Marshal(Support{Missing: map[Feature]string{FeatureSeatbelt: "gone"}}.Missing)
	if err != nil || string(m) != `{"seatbelt":"gone"}` {
		t.Errorf("Missing encodes as %s, %v; want names as keys", m, err)
	}
	if _, err := Feature(0).MarshalText(); err == nil {
		t.Error("the zero feature marshals")
	}
}

// TestEveryFeatureButSeatbeltCanBeDisabled: doctor's --disable once knew
// five features, and refused mounts, which the config accepts.
func TestEveryFeatureButSeatbeltCanBeDisabled(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"user_namespaces", "landlock", "landlock_net", "landlock_scope", "seccomp", "mounts"} {
		if f, err := ParseFeature(name); err != nil || f.String() != name {
			t.Errorf("ParseFeature(%q) = %v, %v", name, f, err)
		}
	}
	for _, name := range []string{"seatbelt", "", "apparmor", "Landlock"} {
		if f, err := ParseFeature(name); err == nil {
			t.Errorf("ParseFeature(%q) = %v, want an error", name, f)
		}
	}
	if got := sortedFeatures(map[Feature]string{FeatureMounts: "x", FeatureUserNamespaces: "y", FeatureSeatbelt: "z"}); !slices.Equal(got, []Feature{FeatureUserNamespaces, FeatureMounts, FeatureSeatbelt}) {
		t.Errorf("sortedFeatures = %v: doctor leaves out a missing feature", got)
	}
}

// TestSelfTestResultsKeepTheirTexts pins the texts of the self-test's
// attempts and outcomes, which cross from the self-test to doctor as JSON
// and are printed by doctor.
func TestSelfTestResultsKeepTheirTexts(t *testing.T) {
	t.Parallel()
	names := []string{"read_home_secret", "write_outside", "exec_dropped_file", "exec_memfd", "tcp_connect_loopback", "udp_send",
		"raw_socket", "signal_mcpwarden", "tiocsti", "read_mcpwarden_environ", "find_mcpwarden_variable"}
	if len(Attempts) != len(names) {
		t.Fatalf("%d attempts, the test knows %d", len(Attempts), len(names))
	}
	for i, a := range Attempts {
		r := Result{Attempt: a, Outcome: Outcome(i % 3), Detail: "d"}
		b, err := json.Marshal(r)
		var back Result
		if err != nil || json.Unmarshal(b, &back) != nil || back != r || a.String() != names[i] || a.Title() == a.String() {
			t.Errorf("attempt %q: %s, %v reads back as %+v", names[i], b, err, back)
		}
	}
	for o, want := range map[Outcome]string{Blocked: "blocked", NotBlocked: "NOT BLOCKED", NotApplicable: "not applicable"} {
		if b, err := o.MarshalText(); err != nil || string(b) != want {
			t.Errorf("outcome %d: %q, %v; want %q", uint8(o), b, err, want)
		}
	}
	if err := json.Unmarshal([]byte(`{"attempt":"fly","outcome":"blocked"}`), new(Result)); err == nil {
		t.Error("an unknown attempt reads without error")
	}
}

// TestReportKeepsConfinementNames pins the names of the confinements in a
// Report, which the launcher sends mcpwarden as JSON and the upstream's
// event logs.
func TestReportKeepsConfinementNames(t *testing.T) {
	t.Parallel()
	r := Report{Applied: []Confinement{ConfineUserNamespace, ConfineLandlockNet, ConfineSeatbelt}, Missing: []Missing{{Confinement: ConfineSeccomp, Reason: "r"}}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	want := `"applied":["user_namespace","landlock_tcp","seatbelt"],"missing":[{"confinement":"seccomp","reason":"r"}]`
	if !strings.Contains(string(b), want) {
		t.Errorf("the report encodes as %s, want it to hold %s", b, want)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil || !slices.Equal(back.Applied, r.Applied) || back.Missing[0] != r.Missing[0] {
		t.Errorf("the report reads back as %+v, %v", back, err)
	}
	for c := Confinement(1); int(c) < len(confinementNames); c++ {
		if confinementNames[c] == "" {
			t.Errorf("confinement %d has no name", uint8(c))
		}
	}
}
