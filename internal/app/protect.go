package app

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/mcpwarden/mcpwarden/internal/clientconfig"
	"github.com/mcpwarden/mcpwarden/internal/config"
	"github.com/mcpwarden/mcpwarden/rules"
)

// A host is what finding the files mcpwarden runs on needs from the
// machine: the environment, the running binary and the program search
// path. realHost is this machine's.
type host struct {
	getenv     func(string) string
	executable func() (string, error)
	lookPath   func(string) (string, error)
	goos       string
}

// realHost is the host mcpwarden runs on.
func realHost() host {
	return host{getenv: os.Getenv, executable: os.Executable, lookPath: exec.LookPath, goos: runtime.GOOS}
}

// protectSelf adds to spec (cfg's rules, mcpwarden running in workDir)
// what the built-in self-protection guards besides mcpwarden's own files
// (config.OwnFiles, already there): the files that route a client through
// mcpwarden or run on its behalf. They are the client config files of
// every client, under any directory (clientconfig.ProjectFiles) and in the
// user's home (clientconfig.UserFiles), and the one the config was
// imported from (clientconfig.ImportedFrom); the mcpwarden binary, and
// its name (and `mcpwarden`) in every directory on PATH; the resolver
// program of ask.resolver.command, with each argument that names an
// existing file (the script an interpreter runs); and the audit signing
// key (config.AuditKeyPath: audit.key_file or the persistent state
// directory) and the witness file with its lock, which whoever could
// write would forge or roll back the checkpoints. A link's target is
// protected beside the link.
func protectSelf(spec *rules.Spec, cfg *config.Config, workDir string, h host) {
	add := func(p string) {
		if !filepath.IsAbs(p) {
			return
		}
		spec.Protected = append(spec.Protected, filepath.Clean(p))
		if real, err := filepath.EvalSymlinks(p); err == nil && real != filepath.Clean(p) {
			spec.Protected = append(spec.Protected, real)
		}
	}
	spec.ProtectedNames = append(spec.ProtectedNames, clientconfig.ProjectFiles()...)
	if data, err := os.ReadFile(cfg.File); cfg.File != "" && err == nil {
		if from, ok := clientconfig.ImportedFrom(data); ok {
			add(from) // whatever its name
		}
	}
	for _, p := range clientconfig.UserFiles(h.goos, h.getenv("HOME"), h.getenv("APPDATA")) {
		add(p)
	}
	names := []string{"mcpwarden"}
	if exe, err := h.executable(); err == nil {
		add(exe)
		if base := filepath.Base(exe); base != names[0] {
			names = append(names, base)
		}
	}
	// A client config may run mcpwarden by name: a new one earlier on
	// PATH (~/.local/bin) would run instead.
	for _, dir := range filepath.SplitList(h.getenv("PATH")) {
		for _, n := range names {
			add(filepath.Join(dir, n))
		}
	}
	if argv := cfg.Ask.Resolver.Command; len(argv) > 0 && argv[0] != "" {
		prog := argv[0]
		switch {
		case filepath.IsAbs(prog):
		case strings.ContainsRune(prog, filepath.Separator):
			prog = filepath.Join(cfg.Dir, prog) // as startResolvers runs it
		default:
			// Run by name: a new one earlier on PATH would run instead.
			for _, dir := range filepath.SplitList(h.getenv("PATH")) {
				add(filepath.Join(dir, prog))
			}
			prog, _ = h.lookPath(prog)
		}
		add(prog)
		for _, a := range argv[1:] {
			paths := []string{a}
			if !filepath.IsAbs(a) {
				paths = []string{filepath.Join(workDir, a), filepath.Join(cfg.Dir, a)}
			}
			for _, p := range paths {
				if info, err := os.Stat(p); err == nil && info.Mode().IsRegular() {
					add(p)
				}
			}
		}
	}
	if p, err := cfg.AuditKeyPath(h.getenv); err == nil {
		add(p) // whether or not it signs now: the key a later start uses
	}
	if p := cfg.AuditWitnessPath(); p != "" {
		add(p)
		add(p + ".lock")
	}
}
