package audit

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"
)

// The sink names accepted in Config.Sink.
const (
	SinkFile   = "file"
	SinkStderr = "stderr"
	SinkNone   = "none"
	SinkHTTP   = "http"
)

// Defaults of the redaction limits.
const (
	DefaultMaxStringLen  = 200
	DefaultKeepPrefixLen = 80
)

// Config is the `audit:` section of the config file. The zero value writes
// audit events to stderr with the default redaction.
//
// Sink is "file", "stderr", "none" or "http". Empty means "file" when Path is
// set, "http" when URL is set, and "stderr" otherwise: audit is never off
// unless asked for with "none". Path is the log file (created 0600, parent
// directories 0700). Required makes write errors deny calls (the proxy acts on
// Log.Required). Fsync syncs the file after every event. MaxSizeMB > 0 rotates
// the file when the next line would take it over that many MiB; MaxBackups
// keeps that many rotated files (0 keeps all). RedactKeys adds key patterns to
// those secrets.IsSecretKey names. MaxStringLen (0 = 200) and KeepPrefixLen (0 = 80, or MaxStringLen if less) are the
// string limits of the Redactor, in characters.
type Config struct {
	Sink          string   `koanf:"sink"`
	Path          string   `koanf:"path"`
	Required      bool     `koanf:"required"`
	Fsync         bool     `koanf:"fsync"`
	MaxSizeMB     int      `koanf:"max_size_mb"`
	MaxBackups    int      `koanf:"max_backups"`
	RedactKeys    []string `koanf:"redact_keys"`
	MaxStringLen  int      `koanf:"max_string_len"`
	KeepPrefixLen int      `koanf:"keep_prefix_len"`
	URL           string   `koanf:"url"`

	// Signed checkpoints (docs/design.md, "Audit you can prove"). Unsigned
	// turns them off. CheckpointEvery (0 = 1000) events and
	// CheckpointInterval (0 = 1m) say how often one is written, besides
	// at rotation and shutdown. Witness also gets every checkpoint: a
	// file outside the log's folder, "stderr", or an http(s) URL. KeyFile
	// holds the signing key (a note signer key); empty uses
	// MCPWARDEN_AUDIT_SIGNING_KEY, else the key generated on first use in
	// mcpwarden's state directory.
	Unsigned           bool          `koanf:"unsigned"`
	CheckpointEvery    int           `koanf:"checkpoint_every"`
	CheckpointInterval time.Duration `koanf:"checkpoint_interval"`
	Witness            string        `koanf:"witness"`
	KeyFile            string        `koanf:"key_file"`
}

// WitnessStderr is the Config.Witness value that writes checkpoints to
// stderr.
const WitnessStderr = "stderr"

// SinkName returns the sink c selects, with the default for an empty Sink
// applied.
func (c Config) SinkName() string {
	switch {
	case c.Sink != "":
		return c.Sink
	case c.Path != "":
		return SinkFile
	case c.URL != "":
		return SinkHTTP
	default:
		return SinkStderr
	}
}

func (c Config) limits() (maxLen, keep int) {
	maxLen, keep = c.MaxStringLen, c.KeepPrefixLen
	if maxLen == 0 {
		maxLen = DefaultMaxStringLen
	}
	if keep == 0 {
		keep = min(DefaultKeepPrefixLen, maxLen)
	}
	return maxLen, keep
}

// Validate reports every problem in c, joined, each naming its field as
// audit.<key>. Settings that would be silently ignored by the chosen sink
// (a path for stderr, fsync without a file) are errors too.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	sink := c.SinkName()
	switch sink {
	case SinkFile:
		if c.Path == "" {
			bad("audit.path: required for audit.sink %q", sink)
		}
	case SinkHTTP:
		if c.URL == "" {
			bad("audit.url: required for audit.sink %q", sink)
		}
	case SinkStderr, SinkNone:
	default:
		bad("audit.sink: %q is not one of file, stderr, none, http", c.Sink)
	}
	if c.Path != "" && sink != SinkFile {
		bad("audit.path: set, but audit.sink is %q (use sink: file)", sink)
	}
	if c.URL != "" {
		if sink != SinkHTTP {
			bad("audit.url: set, but audit.sink is %q (use sink: http)", sink)
		}
		if u, err := url.Parse(c.URL); err != nil {
			bad("audit.url: %w", err)
		} else if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("audit.url: %q is not an http(s) URL", c.URL)
		}
	}
	if sink != SinkFile {
		if c.Fsync {
			bad("audit.fsync: only meaningful with audit.sink file")
		}
		if c.MaxSizeMB != 0 || c.MaxBackups != 0 {
			bad("audit.max_size_mb/audit.max_backups: only meaningful with audit.sink file")
		}
	}
	if c.MaxSizeMB < 0 {
		bad("audit.max_size_mb: %d is negative", c.MaxSizeMB)
	}
	if c.MaxBackups < 0 {
		bad("audit.max_backups: %d is negative", c.MaxBackups)
	}
	if c.MaxStringLen < 0 {
		bad("audit.max_string_len: %d is negative", c.MaxStringLen)
	}
	if c.KeepPrefixLen < 0 {
		bad("audit.keep_prefix_len: %d is negative", c.KeepPrefixLen)
	}
	if maxLen, keep := c.limits(); c.MaxStringLen >= 0 && c.KeepPrefixLen >= 0 && keep > maxLen {
		bad("audit.keep_prefix_len: %d is more than audit.max_string_len %d", keep, maxLen)
	}
	if c.CheckpointEvery < 0 {
		bad("audit.checkpoint_every: %d is negative", c.CheckpointEvery)
	}
	if c.CheckpointInterval < 0 {
		bad("audit.checkpoint_interval: %s is negative", c.CheckpointInterval)
	}
	if c.Unsigned && (c.Witness != "" || c.KeyFile != "" || c.CheckpointEvery != 0 || c.CheckpointInterval != 0) {
		bad("audit.unsigned: true, but checkpoints are configured (remove audit.witness, audit.key_file, audit.checkpoint_every and audit.checkpoint_interval, or unsigned)")
	}
	if c.Witness != "" && sink == SinkNone {
		bad("audit.witness: set, but audit.sink is none: nothing is signed for it to witness")
	}
	if err := c.checkWitness(); err != nil {
		errs = append(errs, err)
	}
	for i, p := range c.RedactKeys {
		if err := checkPattern(p); err != nil {
			bad("audit.redact_keys[%d]: %w", i, err)
		}
	}
	return errors.Join(errs...)
}

// checkWitness checks audit.witness: stderr, an http(s) URL, or a file
// outside the folder of the audit log (which whoever can rewrite the log
// can rewrite too).
func (c Config) checkWitness() error {
	w := c.Witness
	switch {
	case w == "" || w == WitnessStderr:
		return nil
	case strings.HasPrefix(w, "http://") || strings.HasPrefix(w, "https://"):
		if u, err := url.Parse(w); err != nil || u.Host == "" {
			return fmt.Errorf("audit.witness: %q is not an http(s) URL", w)
		}
		return nil
	case strings.Contains(w, "://"):
		return fmt.Errorf("audit.witness: %q: want a file path, stderr, or an http(s) URL", w)
	}
	if c.Path != "" && filepath.IsAbs(w) == filepath.IsAbs(c.Path) {
		logDir := filepath.Clean(filepath.Dir(c.Path))
		if rel, err := filepath.Rel(logDir, filepath.Clean(w)); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return fmt.Errorf("audit.witness: %q is inside the audit log's folder %s; put the witness where the log's writer cannot rewrite it together with the log", w, logDir)
		}
	}
	return nil
}
