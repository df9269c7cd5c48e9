package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
)

// A CaseRule is the value of paths_case_insensitive: "" or "auto", "true"
// or "false". YAML may give it as a boolean; decodeCaseRule accepts both.
type CaseRule string

// CaseRule values.
const (
	CaseAuto  CaseRule = "auto"
	CaseTrue  CaseRule = "true"
	CaseFalse CaseRule = "false"
)

// validate reports a value that is not a CaseRule.
func (r CaseRule) validate() error {
	switch r {
	case "", CaseAuto, CaseTrue, CaseFalse:
		return nil
	}
	return fmt.Errorf("paths_case_insensitive: %q is not auto, true or false", string(r))
}

// Fold resolves the rule on the host goos: auto folds case where the
// host's filesystems usually do (darwin, windows, ios).
func (r CaseRule) Fold(goos string) bool {
	switch r {
	case CaseTrue:
		return true
	case CaseFalse:
		return false
	}
	switch goos {
	case "darwin", "windows", "ios":
		return true
	}
	return false
}

// decodeCaseRule is a decode hook that lets paths_case_insensitive be a
// YAML boolean as well as a string.
func decodeCaseRule(_ reflect.Type, to reflect.Type, data any) (any, error) {
	if to != reflect.TypeFor[CaseRule]() {
		return data, nil
	}
	if b, ok := data.(bool); ok {
		return strconv.FormatBool(b), nil
	}
	return data, nil
}

// Home is the directory a leading `~` in the server's path arguments
// stands for: its path_home; for a stdio server, else HOME in its env,
// else mcpwarden's own home (which it inherits); "" when unknown.
func (c *Config) Home(name string) string {
	s := c.Servers[name]
	switch {
	case s.PathHome != "":
		return filepath.Clean(s.PathHome)
	case s.EffectiveTransport() != TransportStdio:
		return ""
	case filepath.IsAbs(s.Env["HOME"]):
		return filepath.Clean(s.Env["HOME"])
	}
	if h, err := os.UserHomeDir(); err == nil && filepath.IsAbs(h) {
		return filepath.Clean(h)
	}
	return ""
}

// foldPaths resolves paths_case_insensitive on this host.
func (c *Config) foldPaths() bool {
	return c.PathsCaseInsensitive.Fold(runtime.GOOS)
}
