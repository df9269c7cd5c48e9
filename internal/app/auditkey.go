package app

import (
	"fmt"

	"golang.org/x/mod/sumdb/note"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/config"
)

// AuditSigningKey returns the key that signs the audit log's checkpoints:
// nil with audit.unsigned or audit.sink none; else the key in the
// MCPWARDEN_AUDIT_SIGNING_KEY variable, else the one in audit.key_file or
// the state directory, made there on first use (config.AuditKeyPath).
func AuditSigningKey(cfg *config.Config, getenv func(string) string) (*audit.SigningKey, error) {
	if cfg.Audit.Unsigned || cfg.Audit.SinkName() == audit.SinkNone {
		return nil, nil
	}
	if skey := getenv(config.AuditKeyEnv); skey != "" {
		k, err := audit.ParseSigningKey(skey)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", config.AuditKeyEnv, err)
		}
		return &k, nil
	}
	path, err := cfg.AuditKeyPath(getenv)
	if err != nil {
		return nil, err
	}
	k, err := audit.LoadSigningKey(path)
	if err != nil {
		return nil, err
	}
	return &k, nil
}

// VerifyKeys reads what audit verify holds a log to: the public key pub
// (as audit key prints it, or a file holding it) and the newest
// checkpoints of the witness file, checked against that key. Either may
// be empty.
func VerifyKeys(pub, witness string) (note.Verifiers, map[string]audit.Checkpoint, error) {
	var key note.Verifiers
	if pub != "" {
		var err error
		if key, err = audit.ParseVerifierKey(pub); err != nil {
			return nil, nil, fmt.Errorf("--key: %w", err)
		}
	}
	if witness == "" {
		return key, nil, nil
	}
	w, err := audit.ReadWitnessFile(witness, key)
	if err != nil {
		return nil, nil, fmt.Errorf("--witness %s: %w", witness, err)
	}
	return key, w, nil
}
