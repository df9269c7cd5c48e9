package rules

import (
	"slices"
	"strings"
	"testing"
)

func TestEnforcementTakesTheMostSpecificSetting(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name            string
		spec            Spec
		server, profile string
		want            Enforce
	}{
		{name: "nothing written is enforced", spec: Spec{Servers: map[string]ServerSpec{"fs": {}}}, server: "fs", want: EnforceEnforce},
		{name: "the global setting applies to every server", spec: Spec{Enforce: EnforceShadow, Servers: map[string]ServerSpec{"fs": {}}}, server: "fs", want: EnforceShadow},
		{name: "a server's enforce wins over the global shadow", spec: Spec{Enforce: EnforceShadow, Servers: map[string]ServerSpec{"fs": {Enforce: EnforceEnforce}}}, server: "fs", want: EnforceEnforce},
		{name: "a server's shadow wins over the global enforce", spec: Spec{Enforce: EnforceEnforce, Servers: map[string]ServerSpec{"fs": {Enforce: EnforceShadow}}}, server: "fs", want: EnforceShadow},
		{name: "another server keeps the global setting", spec: Spec{Servers: map[string]ServerSpec{"fs": {Enforce: EnforceShadow}, "git": {}}}, server: "git", want: EnforceEnforce},
		{
			name: "a profile's shadow wins over the global enforce", server: "fs", profile: "ci", want: EnforceShadow,
			spec: Spec{Enforce: EnforceEnforce, Servers: map[string]ServerSpec{"fs": {}}, Profiles: map[string]PolicySpec{"ci": {}}, ProfileEnforce: map[string]Enforce{"ci": EnforceShadow}},
		},
		{
			name: "a profile's enforce wins over the global shadow", server: "fs", profile: "ci", want: EnforceEnforce,
			spec: Spec{Enforce: EnforceShadow, Servers: map[string]ServerSpec{"fs": {}}, Profiles: map[string]PolicySpec{"ci": {}}, ProfileEnforce: map[string]Enforce{"ci": EnforceEnforce}},
		},
		{
			name: "a server's enforce wins over its client's profile shadow", server: "fs", profile: "ci", want: EnforceEnforce,
			spec: Spec{Servers: map[string]ServerSpec{"fs": {Enforce: EnforceEnforce}}, Profiles: map[string]PolicySpec{"ci": {}}, ProfileEnforce: map[string]Enforce{"ci": EnforceShadow}},
		},
		{
			name: "a profile's shadow does not reach clients without it", server: "fs", want: EnforceEnforce,
			spec: Spec{Servers: map[string]ServerSpec{"fs": {}}, Profiles: map[string]PolicySpec{"ci": {}}, ProfileEnforce: map[string]Enforce{"ci": EnforceShadow}},
		},
		{
			name: "an unknown profile is enforced even under a global shadow", server: "fs", profile: "nope", want: EnforceEnforce,
			spec: Spec{Enforce: EnforceShadow, Servers: map[string]ServerSpec{"fs": {Enforce: EnforceShadow}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := mustCompile(t, tt.spec)
			if got := p.Enforcement(tt.server, tt.profile); got != tt.want {
				t.Errorf("Enforcement(%q, %q) = %v, want %v", tt.server, tt.profile, got, tt.want)
			}
		})
	}
}

func TestANilPolicyIsEnforced(t *testing.T) {
	t.Parallel()
	var p *Policy
	if got := p.Enforcement("fs", ""); got != EnforceEnforce {
		t.Errorf("Enforcement of a nil policy = %v, want enforce", got)
	}
	if got := p.Shadowing(); got.On() {
		t.Errorf("Shadowing of a nil policy = %+v, want off", got)
	}
}

func TestShadowModeListsWhatTheRulesDenyOutright(t *testing.T) {
	t.Parallel()
	p := mustCompile(t, Spec{
		Enforce:  EnforceShadow,
		Global:   PolicySpec{Deny: []string{"mcp:*:delete_*"}},
		Servers:  map[string]ServerSpec{"fs": {}, "git": {Enforce: EnforceEnforce}},
		Profiles: map[string]PolicySpec{"ci": {Deny: []string{"mcp:fs:read_*"}}},
	})
	tests := []struct {
		name           string
		call           Call
		hidden, denies bool
	}{
		{name: "a denied tool of a shadowed server is listed", call: Call{Server: "fs", Tool: "delete_file"}, hidden: false, denies: true},
		{name: "a denied tool of an enforced server is hidden", call: Call{Server: "git", Tool: "delete_branch"}, hidden: true, denies: true},
		{name: "a profile's outright deny is listed under shadow", call: Call{Profile: "ci", Server: "fs", Tool: "read_file"}, hidden: false, denies: true},
		{name: "an unknown profile still hides everything", call: Call{Profile: "nope", Server: "fs", Tool: "read_file"}, hidden: true, denies: true},
		{name: "a tool no deny names is neither", call: Call{Server: "fs", Tool: "read_file"}, hidden: false, denies: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := p.Hidden(tt.call); got != tt.hidden {
				t.Errorf("Hidden(%+v) = %v, want %v", tt.call, got, tt.hidden)
			}
			if got := p.DeniesOutright(tt.call); got != tt.denies {
				t.Errorf("DeniesOutright(%+v) = %v, want %v", tt.call, got, tt.denies)
			}
		})
	}
}

func TestShadowingNamesTheShadowedServersAndProfiles(t *testing.T) {
	t.Parallel()
	p := mustCompile(t, Spec{
		Servers:        map[string]ServerSpec{"fs": {Enforce: EnforceShadow}, "git": {}, "web": {}},
		Profiles:       map[string]PolicySpec{"ci": {}, "dev": {}, "ops": {}},
		ProfileEnforce: map[string]Enforce{"dev": EnforceShadow, "ops": EnforceEnforce},
	})
	got := p.Shadowing()
	if want := []string{"fs"}; !slices.Equal(got.Servers, want) {
		t.Errorf("Servers = %q, want %q", got.Servers, want)
	}
	// ci and ops reach fs, which is shadowed whatever the profile says.
	if want := []string{"ci", "dev", "ops"}; !slices.Equal(got.Profiles, want) {
		t.Errorf("Profiles = %q, want %q", got.Profiles, want)
	}
	if !got.On() {
		t.Error("On() = false, want true")
	}
	if off := mustCompile(t, Spec{Servers: map[string]ServerSpec{"fs": {}}}).Shadowing(); off.On() {
		t.Errorf("Shadowing with no setting = %+v, want off", off)
	}
}

func TestEnforceReadsOnlyItsTwoValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		text string
		want Enforce
		err  bool
	}{
		{name: "enforce", text: "enforce", want: EnforceEnforce},
		{name: "shadow", text: "shadow", want: EnforceShadow},
		{name: "empty is not set", text: "", want: EnforceUnset},
		{name: "a misspelling is refused", text: "shadwo", err: true},
		{name: "upper case is refused", text: "Shadow", err: true},
		{name: "a boolean is refused", text: "true", err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got Enforce
			err := got.UnmarshalText([]byte(tt.text))
			if tt.err {
				if err == nil || !strings.Contains(err.Error(), "enforce or shadow") {
					t.Fatalf("UnmarshalText(%q) = %v, want an error naming enforce or shadow", tt.text, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("UnmarshalText(%q) = %v, %v; want %v", tt.text, got, err, tt.want)
			}
		})
	}
}

func TestCompileRefusesAnEnforceOfAnUnknownProfile(t *testing.T) {
	t.Parallel()
	_, err := Compile(Spec{ProfileEnforce: map[string]Enforce{"ci": EnforceShadow}})
	if err == nil || !strings.Contains(err.Error(), "profiles.ci.enforce") {
		t.Fatalf("Compile = %v, want an error naming profiles.ci.enforce", err)
	}
	_, err = Compile(Spec{Enforce: Enforce(7)})
	if err == nil || !strings.Contains(err.Error(), "enforce") {
		t.Fatalf("Compile with Enforce(7) = %v, want an error", err)
	}
}

func TestTheEnforceModeChangesThePolicyHash(t *testing.T) {
	t.Parallel()
	base := Spec{Servers: map[string]ServerSpec{"fs": {}}}
	shadow := Spec{Enforce: EnforceShadow, Servers: map[string]ServerSpec{"fs": {}}}
	if a, b := mustCompile(t, base).SHA256(), mustCompile(t, shadow).SHA256(); a == b {
		t.Errorf("a shadowed policy has the enforced one's hash %s", a)
	}
}
