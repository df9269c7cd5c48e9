package secrets

import "testing"

// TestIsSecretKeyIsTheUnionOfBothDetectors holds every key that the audit
// redactor's list or the client-config importer's list called secret before
// they became this one detector, and keys that neither did.
func TestIsSecretKeyIsTheUnionOfBothDetectors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		key  string
		want bool
	}{
		{"an audit fragment anywhere in the key", "accessToken", true},
		{"an upper-case env variable", "GITHUB_PERSONAL_ACCESS_TOKEN", true},
		{"a header with key in it", "X-Api-Key", true},
		{"a camel-case api key", "apiKey", true},
		{"a word that merely holds key", "keyword", true},
		{"a passphrase", "ssh_passphrase", true},
		{"a session id", "user_session_id", true},
		{"a connection string", "DB_CONNECTION_STRING", true},
		{"a cookie header", "Cookie", true},
		{"a signature", "x-amz-signature", true},
		{"plural credentials", "aws_credentials", true},
		{"pass as the whole key", "pass", true},
		{"pass as a word", "SMTP_PASS", true},
		{"pwd as a word", "DB_PWD", true},
		{"auth as a word", "X-Auth", true},
		{"auth as a camel-case word", "basicAuth", true},
		{"pat as a word", "GITLAB_PAT", true},
		{"dsn as the whole key", "dsn", true},
		{"dsn as a word", "SENTRY_DSN", true},
		{"a jwt", "id_jwt", true},
		{"a bearer", "bearerValue", true},
		{"path is not pat", "path", false},
		{"author is not auth", "author", false},
		{"passenger is not pass", "passenger", false},
		{"a harmless env variable", "LOG_LEVEL", false},
		{"node env", "NODE_ENV", false},
		{"a user name", "user", false},
		{"an empty key", "", false},
		{"a Kelvin sign that lower-cases to k", "\u212Aey", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := IsSecretKey(tt.key); got != tt.want {
				t.Errorf("IsSecretKey(%q) = %v, want %v", tt.key, got, tt.want)
			}
		})
	}
}

func BenchmarkIsSecretKey(b *testing.B) {
	keys := []string{"path", "GITHUB_PERSONAL_ACCESS_TOKEN", "content", "X-Request-Id", "db_pwd"}
	b.ReportAllocs()
	for b.Loop() {
		for _, k := range keys {
			IsSecretKey(k)
		}
	}
}
