package config

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
)

// State says where replicas share their state (docs/design.md, "Shared state"): sessions,
// grants, pending asks and their answers, single-use tokens. Without a
// state block everything stays in this process's memory, as with one
// replica.
type State struct {
	// URL is the Redis 7 or Valkey server: redis://host:port[/db],
	// rediss://… for TLS, or unix:///path/to/socket. It must not hold a
	// password (see PasswordEnv).
	URL string `koanf:"url"`
	// Namespace separates deployments that share one Redis: keys start
	// "mcpwarden:<namespace>:". "" means "default".
	Namespace string `koanf:"namespace"`
	// PasswordEnv names the environment variable holding the Redis
	// password (AUTH), so that it stays out of the config file.
	PasswordEnv string `koanf:"password_env"`
}

// The schemes a state URL may have.
var stateSchemes = map[string]bool{"redis": true, "rediss": true, "unix": true}

// namespacePattern is what a state namespace may be: a short name, so a
// key's parts stay apart.
var namespacePattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// dbPattern is the path of a redis:// URL: none, or a database number.
var dbPattern = regexp.MustCompile(`^(/[0-9]{0,9})?$`)

// envNamePattern is what an environment variable's name may be.
var envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// validate checks the state block, naming the key of each problem.
func (s *State) validate() []error {
	if s == nil {
		return nil
	}
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	switch u, err := url.Parse(s.URL); {
	case s.URL == "":
		errs = append(errs, errors.New("state.url: required in a state block (redis://host:port); drop the block to keep state in memory"))
	case err != nil:
		// Not the URL itself, nor url.Error's text that repeats it: it
		// may hold a password.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		add("state.url: is not a URL: %v", err)
	case !stateSchemes[u.Scheme]:
		add("state.url: %q must start with redis://, rediss:// or unix://", u.Redacted())
	case u.Scheme != "unix" && u.Hostname() == "":
		add("state.url: %q names no host", u.Redacted())
	case u.Scheme == "unix" && u.Path == "":
		add("state.url: %q names no socket path", u.Redacted())
	case u.RawQuery != "" || u.Fragment != "" || u.Opaque != "":
		add("state.url: %q must have no query or fragment: the timeouts are mcpwarden's", u.Redacted())
	case u.Scheme != "unix" && !dbPattern.MatchString(u.Path):
		add("state.url: %q must end with the host:port or a database number (/0)", u.Redacted())
	default:
		if _, ok := u.User.Password(); ok {
			add("state.url: %q holds a password; put it in an environment variable named by state.password_env instead, to keep it out of the config", u.Redacted())
		}
	}
	if s.Namespace != "" && !namespacePattern.MatchString(s.Namespace) {
		add("state.namespace: %q must be 1 to 64 letters, digits, '_', '.' or '-'", s.Namespace)
	}
	if s.PasswordEnv != "" && !envNamePattern.MatchString(s.PasswordEnv) {
		add("state.password_env: %q is not an environment variable name", s.PasswordEnv)
	}
	return errs
}
