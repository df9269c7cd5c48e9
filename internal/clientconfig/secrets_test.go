package clientconfig

import "testing"

// TestLiteralSecretsTheOldListMissedAreNotCopied holds literal secrets
// that the importer's own detector let through into the generated config
// before it shared internal/secrets with the audit redactor.
func TestLiteralSecretsTheOldListMissedAreNotCopied(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		server Server
		secret string
	}{
		{"a passphrase by its key name", Server{Name: "s", Command: "x", Transport: "stdio", Env: map[string]string{"SSH_PASSPHRASE": "correct horse"}}, "correct horse"},
		{"a session id by its key name", Server{Name: "s", Command: "x", Transport: "stdio", Env: map[string]string{"USER_SESSION_ID": "s3ss10n"}}, "s3ss10n"},
		{"a connection string by its key name", Server{Name: "s", Command: "x", Transport: "stdio", Env: map[string]string{"DB_CONNECTION_STRING": "Server=db;User=sa"}}, "Server=db;User=sa"},
		{"an access token in a URL argument", Server{Name: "s", Command: "x", Transport: "stdio", Args: []string{"https://api.example/x?access_token=abc123xyz"}}, "abc123xyz"},
		{"a PEM private key under a harmless key", Server{Name: "s", Command: "x", Transport: "stdio", Env: map[string]string{"CONFIG": "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----"}}, "MHcCAQEE"},
		{"a bearer token under a harmless env key", Server{Name: "s", Command: "x", Transport: "stdio", Env: map[string]string{"UPSTREAM_HEADER": "Bearer abcdef123456"}}, "abcdef123456"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			convertedWithout(t, tt.server, tt.secret)
		})
	}
}
