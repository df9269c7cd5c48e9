package config

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpwarden/mcpwarden/internal/hostport"
)

// stateDirName is mcpwarden's directory under the runtime or state base.
const stateDirName = "mcpwarden"

// tokenFilePrefix and tokenFileSuffix frame the approvals token file's
// name in the state directory: approvals-<config hash>.json.
const (
	tokenFilePrefix = "approvals-"
	tokenFileSuffix = ".json"
)

// StateDir returns mcpwarden's private directory, where the approvals
// token lives: $XDG_RUNTIME_DIR/mcpwarden, else
// $XDG_STATE_HOME/mcpwarden, else ~/.local/state/mcpwarden (with $HOME).
// getenv reads the environment. It does not create the directory (see
// MakeStateDir).
func StateDir(getenv func(string) string) (string, error) {
	for _, base := range []string{getenv("XDG_RUNTIME_DIR"), getenv("XDG_STATE_HOME")} {
		if filepath.IsAbs(base) {
			return filepath.Join(base, stateDirName), nil
		}
	}
	if home := getenv("HOME"); filepath.IsAbs(home) {
		return filepath.Join(home, ".local", "state", stateDirName), nil
	}
	return "", errors.New("no private directory for mcpwarden's state: set XDG_RUNTIME_DIR, XDG_STATE_HOME or HOME")
}

// AuditKeyEnv is the variable that may hold the audit signing key itself
// (a note signer key, as in audit.key_file); it is not a config key.
const AuditKeyEnv = "MCPWARDEN_AUDIT_SIGNING_KEY"

// auditKeyName is the signing key's file name in the state directory.
const auditKeyName = "audit-signing.key"

// AuditKeyPath returns where the audit signing key is read (and made on
// first use): audit.key_file, joined to the config's directory when
// relative; else audit-signing.key in mcpwarden's persistent state
// directory, $XDG_STATE_HOME/mcpwarden or ~/.local/state/mcpwarden (not
// the runtime directory StateDir prefers, which is emptied at every
// reboot: a key made anew would no longer match the public key auditors
// hold), else in StateDir.
func (c *Config) AuditKeyPath(getenv func(string) string) (string, error) {
	if p := c.Audit.KeyFile; p != "" {
		if !filepath.IsAbs(p) {
			p = filepath.Join(c.Dir, p)
		}
		if !filepath.IsAbs(p) {
			return "", fmt.Errorf("audit.key_file: %q is relative, and the config has no directory to resolve it against; give an absolute path", c.Audit.KeyFile)
		}
		return filepath.Clean(p), nil
	}
	if base := getenv("XDG_STATE_HOME"); filepath.IsAbs(base) {
		return filepath.Join(base, stateDirName, auditKeyName), nil
	}
	if home := getenv("HOME"); filepath.IsAbs(home) {
		return filepath.Join(home, ".local", "state", stateDirName, auditKeyName), nil
	}
	dir, err := StateDir(getenv)
	if err != nil {
		return "", fmt.Errorf("audit signing key: %w (or set audit.key_file, or %s)", err, AuditKeyEnv)
	}
	return filepath.Join(dir, auditKeyName), nil
}

// AuditWitnessPath returns the witness file of audit.witness, joined to
// the config's directory when relative, or "" when the witness is not a
// file (none, stderr, a URL).
func (c *Config) AuditWitnessPath() string {
	w := c.Audit.Witness
	if w == "" || w == "stderr" || strings.Contains(w, "://") {
		return ""
	}
	if !filepath.IsAbs(w) {
		w = filepath.Join(c.Dir, w)
	}
	return filepath.Clean(w)
}

// MakeStateDir creates dir with mode 0700 (and its parents) and makes
// sure it is a directory of this user that no one else can enter.
func MakeStateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating state directory %s: %w", dir, err)
	}
	info, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("state directory %s: %w", dir, err)
	}
	if !info.IsDir() {
		return fmt.Errorf("state directory %s is not a directory", dir)
	}
	if info.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("state directory %s has mode %#o and cannot be made private: %w", dir, info.Mode().Perm(), err)
		}
	}
	return nil
}

// TokenFilePath is where the approvals token of the instance running this
// config is: ask.token_file when set (relative to the config's
// directory), else approvals-<hash of the config's path>.json in
// StateDir, so that instances with different configs do not clash.
func (c *Config) TokenFilePath(getenv func(string) string) (string, error) {
	if p := c.Ask.TokenFile; p != "" {
		if filepath.IsAbs(p) {
			return filepath.Clean(p), nil
		}
		return filepath.Join(c.Dir, p), nil
	}
	dir, err := StateDir(getenv)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(c.File))
	return filepath.Join(dir, tokenFilePrefix+hex.EncodeToString(sum[:6])+tokenFileSuffix), nil
}

// TokenFiles lists the approvals token files in the state directory: the
// running instances' (or stale ones).
func TokenFiles(getenv func(string) string) ([]string, error) {
	dir, err := StateDir(getenv)
	if err != nil {
		return nil, err
	}
	return filepath.Glob(filepath.Join(dir, tokenFilePrefix+"*"+tokenFileSuffix))
}

// OwnFiles are mcpwarden's own files, which the built-in self-protection
// keeps every local server away from (rules.Spec.Protected): the config
// file, the audit log with its lock and rotations, the pin lock, the
// approvals token file and the state directory. What routes a client
// through mcpwarden or runs for it (client configs, the binary, the
// resolver) is found on the host, by the app, when it builds the policy.
func (c *Config) OwnFiles(getenv func(string) string) []string {
	var out []string
	add := func(p string) {
		if p == "" {
			return
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(c.Dir, p)
		}
		if filepath.IsAbs(p) { // a config without a file has no directory
			out = append(out, filepath.Clean(p))
		}
	}
	if c.File != "" {
		add(c.File)
	}
	if c.Audit.Path != "" && c.Audit.SinkName() == "file" {
		path := c.Audit.Path
		if !filepath.IsAbs(path) {
			path = filepath.Join(c.Dir, path)
		}
		if filepath.IsAbs(path) {
			add(path)
			add(path + ".lock")
			ext := filepath.Ext(path)
			out = append(out, strings.TrimSuffix(filepath.Clean(path), ext)+"-*") // rotations: <stem>-NNNNNN<ext>
		}
	}
	add(c.pinLock())
	if p, err := c.TokenFilePath(getenv); err == nil {
		add(p)
	}
	if dir, err := StateDir(getenv); err == nil {
		add(dir)
	}
	if p, err := UpstreamTokenFile(getenv); err == nil {
		add(p)
	}
	return out
}

// onThisMachine reports whether a server runs on this machine, so that
// its paths may reach mcpwarden's own files: one mcpwarden starts (stdio),
// or an HTTP or SSE server at a loopback address.
func (s Server) onThisMachine() bool {
	if s.EffectiveTransport() == TransportStdio {
		return true
	}
	u, err := url.Parse(s.URL)
	return err == nil && hostport.IsLoopback(u.Hostname())
}

// pinLock is the pin lock file's path as written (pin.lock or the default).
func (c *Config) pinLock() string {
	if c.Pin.Lock != "" {
		return c.Pin.Lock
	}
	return DefaultLockFile
}
