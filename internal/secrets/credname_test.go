package secrets

import "testing"

// TestCredentialNamesAreStricterThanSecretKeys holds the names whose
// values a result is redacted for: a credential's name, never a
// pagination cursor, an object key, a keyword, a token count or a
// function's signature, which IsSecretKey (for the audit log, where
// hiding costs nothing) also calls secret.
func TestCredentialNamesAreStricterThanSecretKeys(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		want bool
	}{
		{"AWS_SECRET_ACCESS_KEY", true},
		{"aws_secret_access_key", true},
		{"AWSSecretAccessKey", true},
		{"DB_PASSWORD", true},
		{"password", true},
		{"passwd", true},
		{"PGPASSWORD", true},
		{"MYSQL_PWD", true},
		{"client_secret", true},
		{"GITHUB_TOKEN", true},
		{"access_token", true},
		{"refreshToken", true},
		{"id_token", true},
		{"NPM_TOKEN", true},
		{"apiKey", true},
		{"x-api-key", true},
		{"OPENAI_API_KEY", true},
		{"api_key", true},
		{"apikey", true},
		{"private_key", true},
		{"privateKey", true},
		{"SSH_KEY", true},
		{"signing_key", true},
		{"credentials", true},
		{"Authorization", true},
		{"cookie", true},
		{"DATABASE_DSN", true},
		{"connection_string", true},
		{"session_id", true},
		{"passphrase", true},

		{"key", false},
		{"Key", false},
		{"keyword", false},
		{"keys", false},
		{"sort_key", false},
		{"partitionKey", false},
		{"idempotency_key", false},
		{"cache_key", false},
		{"nextPageToken", false},
		{"next_page_token", false},
		{"continuationToken", false},
		{"pageToken", false},
		{"sync_token", false},
		{"max_tokens", false},
		{"total_tokens", false},
		{"prompt_tokens", false},
		{"output_tokens", false},
		{"signature", false},
		{"path", false},
		{"monkey", false},
		{"tokenizer", false},
		{"passage", false},
		{"compass", false},
	}
	for _, tt := range tests {
		if got := IsCredentialName(tt.name); got != tt.want {
			t.Errorf("IsCredentialName(%q) = %v, want %v", tt.name, got, tt.want)
		}
		if tt.want && !IsSecretKey(tt.name) {
			t.Errorf("IsCredentialName(%q) holds but IsSecretKey does not: credential names must be secret keys", tt.name)
		}
	}
}
