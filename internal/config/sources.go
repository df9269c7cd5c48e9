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
	src := c.source
	switch {
	case src.name != "":
	case c.File != "":
		src.name = "config " + c.File
	default:
		src.name = "config"
	}
	return attribute(err, src, c.envSources)
}

// A textSource is the config text errors are about: its name in them
// ("config FILE") and the text, in its format (ext), to find keys in.
type textSource struct {
	name string
	text []byte
	ext  string
}

// place is the name followed by pos: "config a.yaml:4:5".
func (s textSource) place(pos textPos) string {
	if p := pos.String(); p != "" {
		return s.name + ":" + p
	}
	return s.name
}

// keyOf is the key e is about: the one a keyError carries, else the
// one its message starts with; "" if none.
func keyOf(e error) string {
	if ke, ok := errors.AsType[*keyError](e); ok {
		return ke.key
	}
	if m := leadingKey.FindStringSubmatch(e.Error()); m != nil {
		return m[1]
	}
	return ""
}

func attribute(err error, src textSource, sources envSources) error {
	if err == nil {
		return nil
	}
	parts := flatten(err)
	out := make([]error, 0, len(parts))
	for _, e := range parts {
		if variable := sources.variableFor(e); variable != "" {
			out = append(out, fmt.Errorf("environment variable %s: %w", variable, e))
			continue
		}
		pos := textPos{}
		if key := keyOf(e); key != "" && src.text != nil {
			pos = keyPos(src.text, src.ext, key)
		}
		out = append(out, fmt.Errorf("%s: %w", src.place(pos), e))
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

// flatten is the errors err joins, joins within it opened too.
func flatten(err error) []error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, flatten(e)...)
	}
	return out
}
