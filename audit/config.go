package audit

import (
	"errors"
	"fmt"
	"net/url"
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
}

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
	for i, p := range c.RedactKeys {
		if err := checkPattern(p); err != nil {
			bad("audit.redact_keys[%d]: %w", i, err)
		}
	}
	return errors.Join(errs...)
}
