package config

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// A keyError is a problem with one key, which it names.
type keyError struct {
	key string
	err error
}

func (e *keyError) Error() string { return e.err.Error() }
func (e *keyError) Unwrap() error { return e.err }

// leadingKey matches a key path that starts an error message
// ("servers.fs.cwd: ...", "policy.deny[0]: ...").
var leadingKey = regexp.MustCompile(`^([a-z0-9_]+(?:[.\[][^:\s]*)?):\s`)

// Attribute returns err, a config or policy error found in c, with each
// of the problems it joins prefixed by its source: the environment
// variable that set the key it names, else the config file. Callers that
// compile c's policy use it so that a bad rule from MCPWARDEN_POLICY__DENY
// names the variable, not the file.
func (c *Config) Attribute(err error) error {
	return attribute(err, c.sourceName(), c.envSources)
}

func (c *Config) sourceName() string {
	switch {
	case c.source != "":
		return c.source
	case c.File != "":
		return "config " + c.File
	}
	return "config"
}

func attribute(err error, source string, sources envSources) error {
	if err == nil {
		return nil
	}
	var parts []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		parts = j.Unwrap()
	} else {
		parts = []error{err}
	}
	out := make([]error, 0, len(parts))
	for _, e := range parts {
		if variable := sources.variableFor(e); variable != "" {
			out = append(out, fmt.Errorf("environment variable %s: %w", variable, e))
			continue
		}
		out = append(out, fmt.Errorf("%s: %w", source, e))
	}
	if len(out) == 1 {
		return out[0]
	}
	return errors.Join(out...)
}

// variableFor is the variable that set the key e is about; "" if none
// did, or e names no key.
func (s envSources) variableFor(e error) string {
	if len(s) == 0 {
		return ""
	}
	var ke *keyError
	if errors.As(e, &ke) {
		v, _ := s.of(ke.key)
		return v
	}
	msg := e.Error()
	if m := leadingKey.FindStringSubmatch(msg); m != nil {
		if v, _ := s.of(m[1]); v != "" {
			return v
		}
	}
	// A decoding error quotes the keys it is about ('audit.required').
	for _, v := range s.sortedVars() {
		for k, kv := range s {
			if kv == v && strings.Contains(msg, "'"+k+"'") {
				return v
			}
		}
	}
	return ""
}
