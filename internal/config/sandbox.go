package config

import (
	"fmt"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/mcpwarden/mcpwarden/internal/sandbox"
)

// A Sandbox is the `sandbox:` block, at the top level (the defaults) or
// of one server (overriding them key by key). `sandbox: off` is short for
// `sandbox: {off: true}`. Every stdio server mcpwarden starts is sandboxed
// unless its sandbox is off, also when the config has no such key.
type Sandbox struct {
	// Off runs the server unconfined (validate warns).
	Off bool `koanf:"off"`
	// Tier is auto (""), namespaces or landlock.
	Tier string `koanf:"tier"`
	// Network is proxy ("", the default: only through mcpwarden's egress
	// proxy, each connection decided by the policy as
	// mcp:<server>:network/connect), none or host.
	Network string `koanf:"network"`
	// Read are read-only extra paths; Write read-write ones (never
	// executable). Relative paths are relative to the config's directory.
	Read  []string `koanf:"read"`
	Write []string `koanf:"write"`
	// EnvPassthrough names variables of mcpwarden's environment the server
	// gets (never MCPWARDEN_*).
	EnvPassthrough []string `koanf:"env_passthrough"`
	// Limits bound the server's resources; a zero field is the default.
	Limits SandboxLimits `koanf:"limits"`
	// Require, true unless set false, refuses to start a server that
	// cannot be confined as configured.
	Require *bool `koanf:"require"`
	// Disable treats these kernel features as missing (user_namespaces,
	// landlock, landlock_net, landlock_scope, seccomp, mounts), to see what
	// the server does on a kernel without them: for tests and trials.
	Disable []string `koanf:"disable"`
}

// SandboxLimits are `sandbox.limits`. Memory and FileSize take a number
// of bytes or a size such as "512MiB".
type SandboxLimits struct {
	Processes uint64   `koanf:"processes"`
	Memory    ByteSize `koanf:"memory"`
	OpenFiles uint64   `koanf:"open_files"`
	FileSize  ByteSize `koanf:"file_size"`
}

// A ByteSize is a number of bytes, written as a number or as a size with
// a unit (KiB, MiB, GiB, TiB, or K, M, G, T meaning the same).
type ByteSize uint64

// UnmarshalText reads a size such as "512MiB" or "1048576".
func (b *ByteSize) UnmarshalText(text []byte) error {
	s := strings.TrimSpace(string(text))
	units := []struct {
		suffix string
		shift  uint
	}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"T", 40}, {"G", 30}, {"M", 20}, {"K", 10}, {"B", 0}}
	shift := uint(0)
	for _, u := range units {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			s, shift = strings.TrimSpace(num), u.shift
			break
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n > (1<<63)>>shift {
		return fmt.Errorf("%q is not a size: write a number of bytes or one such as 512MiB or 2GiB", text)
	}
	*b = ByteSize(n << shift)
	return nil
}

// decodeSandbox is a decode hook that reads `sandbox: off` (or false) as
// {off: true} and `sandbox: on` (or true) as the defaults.
func decodeSandbox(_ reflect.Type, to reflect.Type, data any) (any, error) {
	if to != reflect.TypeFor[Sandbox]() && to != reflect.TypeFor[*Sandbox]() {
		return data, nil
	}
	switch v := data.(type) {
	case bool:
		return map[string]any{"off": !v}, nil
	case string:
		switch v {
		case "off":
			return map[string]any{"off": true}, nil
		case "on":
			return map[string]any{}, nil
		}
		return nil, fmt.Errorf("%q is not a sandbox: write off, on, or a map of its keys (tier, network, read, write, env_passthrough, limits, require)", v)
	}
	return data, nil
}

// EffectiveSandbox is the sandbox of stdio server name: its own keys over
// the top-level ones over the defaults, paths made absolute against the
// config's directory. ok is false when the server is not sandboxed (its
// sandbox is off, or it is not a stdio server mcpwarden starts).
func (c *Config) EffectiveSandbox(name string) (sb Sandbox, ok bool) {
	srv := c.Servers[name]
	if srv.EffectiveTransport() != TransportStdio {
		return Sandbox{}, false
	}
	if c.Sandbox != nil {
		sb = *c.Sandbox
	}
	if o := srv.Sandbox; o != nil {
		sb.Off = o.Off // a server's own block, even `sandbox: on`, decides
		sb.Tier = orString(o.Tier, sb.Tier)
		sb.Network = orString(o.Network, sb.Network)
		if o.Read != nil {
			sb.Read = o.Read
		}
		if o.Write != nil {
			sb.Write = o.Write
		}
		if o.EnvPassthrough != nil {
			sb.EnvPassthrough = o.EnvPassthrough
		}
		sb.Limits.Processes = orUint(o.Limits.Processes, sb.Limits.Processes)
		sb.Limits.Memory = ByteSize(orUint(uint64(o.Limits.Memory), uint64(sb.Limits.Memory)))
		sb.Limits.OpenFiles = orUint(o.Limits.OpenFiles, sb.Limits.OpenFiles)
		sb.Limits.FileSize = ByteSize(orUint(uint64(o.Limits.FileSize), uint64(sb.Limits.FileSize)))
		if o.Require != nil {
			sb.Require = o.Require
		}
		if o.Disable != nil {
			sb.Disable = o.Disable
		}
	}
	if sb.Off {
		return sb, false
	}
	sb.Read = c.absPaths(sb.Read)
	sb.Write = c.absPaths(sb.Write)
	return sb, true
}

func orString(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func orUint(a, b uint64) uint64 {
	if a != 0 {
		return a
	}
	return b
}

func (c *Config) absPaths(paths []string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if !filepath.IsAbs(p) && c.Dir != "" {
			p = filepath.Join(c.Dir, p)
		}
		out = append(out, filepath.Clean(p))
	}
	return out
}

// Policy is the sandbox package's policy for s, with the files and
// environment the caller adds (the server's workspace, private HOME and
// TMPDIR, its env). It is only valid for a validated config.
func (s Sandbox) Policy() sandbox.Policy {
	var p sandbox.Policy
	_ = p.Tier.UnmarshalText([]byte(orString(s.Tier, "auto")))
	_ = p.Network.UnmarshalText([]byte(orString(s.Network, "proxy")))
	p.Read = slices.Clone(s.Read)
	p.Write = slices.Clone(s.Write)
	p.Passthrough = slices.Clone(s.EnvPassthrough)
	p.Limits = sandbox.Limits{
		Processes:     s.Limits.Processes,
		MemoryBytes:   uint64(s.Limits.Memory),
		OpenFiles:     s.Limits.OpenFiles,
		FileSizeBytes: uint64(s.Limits.FileSize),
	}
	p.BestEffort = s.Require != nil && !*s.Require
	for _, f := range s.Disable {
		if feat, err := sandbox.ParseFeature(f); err == nil { // validate reports the others
			p.Disable = append(p.Disable, feat)
		}
	}
	return p
}

// validate checks the block at key ("sandbox" or "servers.NAME.sandbox").
func (s *Sandbox) validate(key string) []error {
	if s == nil || s.Off {
		return nil
	}
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(key+format, args...)) }
	var t sandbox.Tier
	if s.Tier != "" {
		if err := t.UnmarshalText([]byte(s.Tier)); err != nil {
			add(".tier: %v", err)
		}
	}
	switch s.Network {
	case "", "proxy", "none", "host":
	default:
		add(".network: %q is not one of proxy (the default: egress through mcpwarden, decided by the policy), none, host", s.Network)
	}
	for _, n := range s.EnvPassthrough {
		if n == "" || strings.ContainsAny(n, "=\x00") {
			add(".env_passthrough: %q is not a variable name", n)
		} else if strings.HasPrefix(strings.ToUpper(n), "MCPWARDEN_") {
			add(".env_passthrough: %q: mcpwarden's own variables never reach a server; drop it", n)
		}
	}
	for _, f := range s.Disable {
		if _, err := sandbox.ParseFeature(f); err != nil {
			add(".disable: %q is not one of user_namespaces, landlock, landlock_net, landlock_scope, seccomp, mounts", f)
		}
	}
	for _, list := range []struct {
		name  string
		paths []string
	}{{"read", s.Read}, {"write", s.Write}} {
		for _, p := range list.paths {
			if p == "" || strings.ContainsRune(p, 0) {
				add(".%s: %q is not a path", list.name, p)
			}
		}
	}
	return errs
}

// validateSandbox checks the top-level and per-server sandbox blocks: their
// values, that no server's sandbox.write or sandbox.read reaches
// mcpwarden's own files, and that outside Linux and macOS every stdio
// server says sandbox: off (no sandbox there yet).
func (c *Config) validateSandbox(ownFiles []string) []error {
	errs := c.Sandbox.validate("sandbox")
	for _, name := range c.ServerNames() {
		srv := c.Servers[name]
		key := "servers." + name + ".sandbox"
		if srv.Sandbox != nil && srv.EffectiveTransport() != TransportStdio {
			errs = append(errs, fmt.Errorf("%s: only stdio servers mcpwarden starts are sandboxed; drop it for this remote server", key))
			continue
		}
		errs = append(errs, srv.Sandbox.validate(key)...)
		sb, on := c.EffectiveSandbox(name)
		if !on {
			continue
		}
		if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
			errs = append(errs, fmt.Errorf("%s: no sandbox on %s yet (Linux and macOS have one); write `sandbox: off` for this server (or at the top level) to run it unconfined", key, runtime.GOOS))
			continue
		}
		for _, list := range []struct {
			name  string
			paths []string
		}{{"read", sb.Read}, {"write", sb.Write}} {
			for _, p := range list.paths {
				if own := ReachesOwnFile(p, ownFiles); own != "" {
					errs = append(errs, fmt.Errorf("%s.%s: %q holds mcpwarden's own file %s, which no server may reach; name a directory that does not", key, list.name, p, own))
				}
			}
		}
	}
	return errs
}

// SandboxWarnings are the validate warnings about sandboxes: servers that
// run unconfined, or with the host's network.
func (c *Config) SandboxWarnings() []string {
	var out []string
	for _, name := range c.ServerNames() {
		if c.Servers[name].EffectiveTransport() != TransportStdio {
			continue
		}
		sb, on := c.EffectiveSandbox(name)
		// The place is the sandbox that decides: the server's own, else the top level's.
		key := "sandbox"
		if c.Servers[name].Sandbox != nil {
			key = "servers." + name + ".sandbox"
		}
		switch {
		case !on:
			out = append(out, fmt.Sprintf("%s: servers.%s: sandbox is off: the server runs unconfined, with your user's files, environment and network", c.placeOf(key), name))
		case sb.Network == "host":
			out = append(out, fmt.Sprintf("%s: servers.%s: sandbox.network is host: the server may connect anywhere", c.placeOf(key+".network"), name))
		}
	}
	return out
}

// ReachesOwnFile returns the first of ownFiles at or under path (a glob
// such as an audit log's rotations counts by its directory part), or "".
func ReachesOwnFile(path string, ownFiles []string) string {
	path = filepath.Clean(path)
	for _, own := range ownFiles {
		o := own
		if i := strings.IndexAny(o, "*?["); i >= 0 {
			o = filepath.Dir(o[:i] + "x")
		}
		if o == path || strings.HasPrefix(o, path+string(filepath.Separator)) || path == "/" {
			return own
		}
	}
	return ""
}
