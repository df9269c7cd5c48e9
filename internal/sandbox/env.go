package sandbox

import (
	"slices"
	"strconv"
	"strings"
)

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

// proxyEnv are the variables that send a server's HTTP clients to its
// egress proxy on 127.0.0.1:port: both spellings of HTTP_PROXY,
// HTTPS_PROXY and ALL_PROXY (curl, Go, Python, npm and uv read one or the
// other), NO_PROXY empty so that no host is carried around it, and
// NODE_USE_ENV_PROXY, without which Node's fetch (22.21 and later, 24)
// ignores the others.
func proxyEnv(port uint16) []string {
	url := "http://127.0.0.1:" + strconv.Itoa(int(port))
	var env []string
	for _, name := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"} {
		env = append(env, name+"="+url, strings.ToLower(name)+"="+url)
	}
	return append(env, "NO_PROXY=", "no_proxy=", "NODE_USE_ENV_PROXY=1")
}

// withEnv is env with each "NAME=value" of kvs set: every variable of the
// same name is dropped and kv appended.
func withEnv(env []string, kvs ...string) []string {
	env = slices.Clone(env)
	for _, kv := range kvs {
		name, _, _ := strings.Cut(kv, "=")
		env = slices.DeleteFunc(env, func(e string) bool { n, _, _ := strings.Cut(e, "="); return n == name })
		env = append(env, kv)
	}
	return env
}
