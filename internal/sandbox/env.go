package sandbox

import "strings"

// serverEnv is the server's environment: from parent, the allowlisted
// names and p.Passthrough; then HOME and TMPDIR; then p.Env. MCPWARDEN_*
// never passes, even when named.
func serverEnv(parent []string, p Policy) []string {
	var env []string
	set := func(kv string) {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(strings.ToUpper(name), "MCPWARDEN_") {
			return
		}
		for i, e := range env {
			if n, _, _ := strings.Cut(e, "="); n == name {
				env[i] = kv
				return
			}
		}
		env = append(env, kv)
	}
	allowed := func(name string) bool {
		for _, a := range append(append([]string{}, EnvAllow...), p.Passthrough...) {
			if pre, ok := strings.CutSuffix(a, "*"); ok && strings.HasPrefix(name, pre) || a == name {
				return true
			}
		}
		return false
	}
	for _, kv := range parent {
		if name, _, _ := strings.Cut(kv, "="); allowed(name) {
			set(kv)
		}
	}
	if p.Home != "" {
		set("HOME=" + p.Home)
	}
	if p.TmpDir != "" {
		set("TMPDIR=" + p.TmpDir)
	}
	for _, kv := range p.Env {
		set(kv)
	}
	return env
}
