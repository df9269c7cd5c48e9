package config

import (
	"fmt"
	"os"
	"regexp"
	"strings"
)

// replicaPattern is what a replica id may be: a host or pod name, so that
// it reads the same in an audit line, a log and a metric label.
var replicaPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,252}$`)

// validateReplica checks the replica key when it is set.
func (c *Config) validateReplica() []error {
	if c.Replica == "" || replicaPattern.MatchString(c.Replica) {
		return nil
	}
	return []error{fmt.Errorf("replica: %q must start with a letter or digit and hold only letters, digits, '_', '.' or '-' (at most 253)", c.Replica)}
}

// ReplicaID is the id this mcpwarden writes in every audit event (the
// replica key): the configured one (MCPWARDEN_REPLICA sets it, as it sets
// any key); else, with a state block (many replicas), the host name, which
// on Kubernetes is the pod's name; else "" (one replica, nothing to tell
// apart). A host name is cut to what a replica id may hold.
func (c *Config) ReplicaID() string {
	if c.Replica != "" || c.State == nil {
		return c.Replica
	}
	host, err := os.Hostname()
	if err != nil {
		return "mcpwarden"
	}
	host = strings.Map(func(r rune) rune {
		if r < 0x80 && (r == '_' || r == '.' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return r
		}
		return '-'
	}, host)
	host = strings.TrimLeft(host, "_.-")
	if len(host) > 253 {
		host = host[:253]
	}
	if host == "" {
		return "mcpwarden"
	}
	return host
}
