package rules

import (
	"fmt"
	"maps"
	"slices"

	"github.com/mcpwarden/mcpwarden/internal/enumtext"
)

// An Enforce is an `enforce` setting: whether the policy's decisions are
// carried out (EnforceEnforce) or only recorded (EnforceShadow: a request
// the rules would refuse or ask about is audited with the decision it would
// have had and forwarded as allowed). The zero value, EnforceUnset, is a
// setting not written, which leaves the decision to the next less specific
// setting; where none is written the policy is enforced.
type Enforce uint8

// The enforce settings.
const (
	EnforceUnset   Enforce = iota // not written: the less specific setting holds
	EnforceEnforce                // "enforce": the decisions are carried out
	EnforceShadow                 // "shadow": they are recorded, and the request forwarded
)

var enforceNames = enumtext.Names[Enforce]{EnforceUnset: "", EnforceEnforce: "enforce", EnforceShadow: "shadow"}

// String returns "enforce", "shadow", "" for EnforceUnset, or "Enforce(N)"
// for a value that is none of them.
func (e Enforce) String() string { return enforceNames.String(e, "Enforce") }

// MarshalText returns the setting's name; it fails for an unknown value.
func (e Enforce) MarshalText() ([]byte, error) { return enforceNames.Marshal(e, "enforce setting") }

// UnmarshalText accepts exactly "enforce" or "shadow" (and "", not set) and
// rejects anything else with an error that names the value and the two
// allowed.
func (e *Enforce) UnmarshalText(b []byte) error {
	if !enforceNames.Set(e, string(b)) {
		return fmt.Errorf("%q is not an enforce mode: write enforce or shadow", b)
	}
	return nil
}

// enforcement is what a Policy keeps of the enforce settings.
type enforcement struct {
	global   Enforce
	servers  map[string]Enforce // ServerSpec.Enforce, where set
	profiles map[string]Enforce // Spec.ProfileEnforce, where set
}

// compileEnforce checks and keeps s's enforce settings.
func (c *compiler) compileEnforce(s Spec) {
	check := func(where string, e Enforce) bool {
		if e > EnforceShadow {
			c.errorf("%s: %v is not enforce or shadow", where, e)
			return false
		}
		return e != EnforceUnset
	}
	en := &c.p.enforce
	check("enforce", s.Enforce)
	en.global = s.Enforce
	for name, srv := range s.Servers {
		if check("servers."+name+".enforce", srv.Enforce) {
			if en.servers == nil {
				en.servers = map[string]Enforce{}
			}
			en.servers[name] = srv.Enforce
		}
	}
	for name, e := range s.ProfileEnforce {
		if _, ok := s.Profiles[name]; !ok {
			c.errorf("profiles.%s.enforce: there is no profile %q", name, name)
			continue
		}
		if check("profiles."+name+".enforce", e) {
			if en.profiles == nil {
				en.profiles = map[string]Enforce{}
			}
			en.profiles[name] = e
		}
	}
}

// Enforcement returns whether the decisions of requests to server from a
// client of profile ("" = none) are enforced or shadowed: the server's
// setting if it has one, else the profile's, else the global one, else
// EnforceEnforce. It never returns EnforceUnset. A nil policy and an
// unknown profile are enforced, as Decide denies everything for them.
func (p *Policy) Enforcement(server, profile string) Enforce {
	if p == nil {
		return EnforceEnforce
	}
	if profile != "" && p.profiles[profile] == nil {
		return EnforceEnforce
	}
	if e, ok := p.enforce.servers[server]; ok {
		return e
	}
	if e, ok := p.enforce.profiles[profile]; ok && profile != "" {
		return e
	}
	if p.enforce.global != EnforceUnset {
		return p.enforce.global
	}
	return EnforceEnforce
}

// A ShadowScope says where shadow mode is on. The zero value says it is
// off everywhere.
type ShadowScope struct {
	// Servers are the servers, sorted, whose requests from a client without
	// a profile are shadowed.
	Servers []string `json:"servers"`
	// Profiles are the profiles, sorted, under which the requests to at
	// least one server are shadowed.
	Profiles []string `json:"profiles"`
}

// On reports whether shadow mode is on anywhere.
func (s ShadowScope) On() bool { return len(s.Servers) > 0 || len(s.Profiles) > 0 }

// Shadowing returns where shadow mode is on, for the start-up log,
// validate and tools to say.
func (p *Policy) Shadowing() ShadowScope {
	out := ShadowScope{Servers: []string{}, Profiles: []string{}}
	if p == nil {
		return out
	}
	servers := slices.Sorted(maps.Keys(p.servers))
	for _, s := range servers {
		if p.Enforcement(s, "") == EnforceShadow {
			out.Servers = append(out.Servers, s)
		}
	}
	for _, prof := range slices.Sorted(maps.Keys(p.profiles)) {
		if slices.ContainsFunc(servers, func(s string) bool { return p.Enforcement(s, prof) == EnforceShadow }) {
			out.Profiles = append(out.Profiles, prof)
		}
	}
	return out
}
