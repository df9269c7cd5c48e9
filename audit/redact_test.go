package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestArgumentsRedactsSecrets(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 250)
	tests := []struct {
		name string
		in   map[string]any
		want map[string]any
	}{
		{"plain arguments stay as they are",
			map[string]any{"path": "/srv/app/x", "count": 3.0, "ok": true, "none": nil},
			map[string]any{"path": "/srv/app/x", "count": 3.0, "ok": true, "none": nil}},
		{"secret-looking keys are redacted whatever the case",
			map[string]any{"API_KEY": "k", "accessToken": "t", "Authorization": "Bearer x", "db_password": "p", "client_secret": "s", "Cookie": "c", "aws_credentials": "c"},
			map[string]any{"API_KEY": Redacted, "accessToken": Redacted, "Authorization": Redacted, "db_password": Redacted, "client_secret": Redacted, "Cookie": Redacted, "aws_credentials": Redacted}},
		{"a secret key hides a whole object or array",
			map[string]any{"secrets": map[string]any{"a": "b"}, "keys": []any{"k1", "k2"}, "token": 12345.0},
			map[string]any{"secrets": Redacted, "keys": Redacted, "token": Redacted}},
		{"nested secrets in objects and arrays are found",
			map[string]any{"headers": map[string]any{"X-Api-Key": "k", "Accept": "json"}, "items": []any{map[string]any{"password": "p", "user": "u"}, []any{map[string]any{"token": "t"}}}},
			map[string]any{"headers": map[string]any{"X-Api-Key": Redacted, "Accept": "json"}, "items": []any{map[string]any{"password": Redacted, "user": "u"}, []any{map[string]any{"token": Redacted}}}}},
		{"long strings are cut",
			map[string]any{"content": long, "list": []any{long}},
			map[string]any{"content": strings.Repeat("a", 80) + " <redacted: 250 chars>", "list": []any{strings.Repeat("a", 80) + " <redacted: 250 chars>"}}},
		{"multi-line strings keep their first line",
			map[string]any{"content": "line one\nline two\nthree"},
			map[string]any{"content": "line one <redacted: 23 chars>"}},
		{"typed maps and slices are redacted too",
			map[string]any{"env": map[string]string{"GITHUB_TOKEN": "ghp_x", "HOME": "/root"}, "args": []string{"a"}},
			map[string]any{"env": map[string]any{"GITHUB_TOKEN": Redacted, "HOME": "/root"}, "args": []any{"a"}}},
		{"raw JSON is decoded and redacted",
			map[string]any{"raw": json.RawMessage(`{"password":"p","n":1}`)},
			map[string]any{"raw": map[string]any{"password": Redacted, "n": json.Number("1")}}},
		{"credentials inside strings are scrubbed",
			map[string]any{"cmd": "curl -H 'Authorization: Bearer abcdef123456' https://bob:hunter22@example.com/x?api_key=zzz&q=1"},
			map[string]any{"cmd": "curl -H 'Authorization: Bearer <redacted>' https://bob:<redacted>@example.com/x?api_key=<redacted>&q=1"}},
	}
	r, err := NewRedactor(Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := r.Arguments(tt.in)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Arguments (-want +got):\n%s", diff)
			}
		})
	}
}

func TestArgumentsDoesNotMutateItsInput(t *testing.T) {
	t.Parallel()
	mk := func() map[string]any {
		return map[string]any{
			"token":  "t",
			"nested": map[string]any{"password": "p", "list": []any{"x", map[string]any{"secret": "s"}}},
			"long":   strings.Repeat("z", 300),
		}
	}
	in, want := mk(), mk()
	out := defaultRedactor.Arguments(in)
	if diff := cmp.Diff(want, in); diff != "" {
		t.Fatalf("input changed (-want +got):\n%s", diff)
	}
	// The output shares nothing: changing it leaves the input alone.
	out["nested"].(map[string]any)["list"].([]any)[0] = "changed"
	if diff := cmp.Diff(want, in); diff != "" {
		t.Errorf("output aliases input (-want +got):\n%s", diff)
	}
}

func TestConfiguredKeysAndLimits(t *testing.T) {
	t.Parallel()
	r, err := NewRedactor(Config{RedactKeys: []string{"ssn", "x-*-id", "card_??"}, MaxStringLen: 10, KeepPrefixLen: 4})
	if err != nil {
		t.Fatal(err)
	}
	got := r.Arguments(map[string]any{"SSN": "1", "x-user-id": "2", "card_no": "3", "card_num": "4", "name": "0123456789", "bio": "0123456789A"})
	want := map[string]any{"SSN": Redacted, "x-user-id": Redacted, "card_no": Redacted, "card_num": "4", "name": "0123456789", "bio": "0123 <redacted: 11 chars>"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := NewRedactor(Config{RedactKeys: []string{"[abc]"}}); err == nil {
		t.Error("NewRedactor accepted an unsupported pattern")
	}
}

func TestStringCutsAtCharacters(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"a short string is unchanged", "hello", "hello"},
		{"exactly the limit is unchanged", strings.Repeat("b", 200), strings.Repeat("b", 200)},
		{"one over the limit is cut", strings.Repeat("b", 201), strings.Repeat("b", 80) + " <redacted: 201 chars>"},
		{"multi-byte characters count once", strings.Repeat("é", 201), strings.Repeat("é", 80) + " <redacted: 201 chars>"},
		{"a leading newline leaves no prefix", "\nsecret stuff", "<redacted: 13 chars>"},
		{"carriage returns are line breaks", "a\r\nb", "a <redacted: 4 chars>"},
		{"a GitHub token is scrubbed", "token is ghp_abcdefghijklmnopqrstuvwxyz0123", "token is <redacted>"},
		{"a JWT is scrubbed", "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig", "jwt <redacted>"},
		{"basic auth headers are scrubbed", "Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic <redacted>"},
		{"the word basic alone is kept", "Basic authentication is used", "Basic authentication is used"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := defaultRedactor.String(tt.in); got != tt.want {
				t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestRedactionIsIdempotent(t *testing.T) {
	t.Parallel()
	in := map[string]any{"a": strings.Repeat("x\n", 200), "token": "t", "b": "Bearer abcdefgh"}
	once := defaultRedactor.Arguments(in)
	if diff := cmp.Diff(once, defaultRedactor.Arguments(once)); diff != "" {
		t.Errorf("second pass changed the output (-once +twice):\n%s", diff)
	}
}

type tokenHolder struct {
	User  string
	Token string `json:"token"`
}

func TestReplaceAttrKeepsSecretsOffStderr(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: defaultRedactor.ReplaceAttr}))
	const secret = "s3cr3t-VALUE"
	log.Info("starting",
		"token", secret,
		slog.Group("headers", "Authorization", "Bearer "+secret, "Accept", "json"),
		slog.Group("credentials", "user", secret),
		"env", map[string]string{"API_KEY": secret},
		"holder", tokenHolder{User: "u", Token: secret},
		"raw", json.RawMessage(`{"password":"`+secret+`"}`),
		"err", fmt.Errorf("dial https://u:%s@host/: refused", secret),
		"url", "https://x/?access_token="+secret,
		"stderr", "panic: boom\n"+secret,
		"count", 3,
	)
	out := buf.String()
	if strings.Contains(out, secret) {
		t.Errorf("log output leaks the secret:\n%s", out)
	}
	for _, want := range []string{"msg=starting", "headers.Accept=json", "count=3", "panic: boom"} {
		if !strings.Contains(out, want) {
			t.Errorf("log output lacks %q:\n%s", want, out)
		}
	}
}

func TestReplaceAttrKeepsErrorsErrors(t *testing.T) {
	t.Parallel()
	a := defaultRedactor.ReplaceAttr(nil, slog.Any("err", errors.New("token ghp_abcdefghijklmnopqrstuvwxyz0123 rejected")))
	err, ok := a.Value.Any().(error)
	if !ok {
		t.Fatalf("value is %T, want an error", a.Value.Any())
	}
	if got, want := err.Error(), "token <redacted> rejected"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestDefaultKeysAreTheSharedDetectors(t *testing.T) {
	t.Parallel()
	r, err := NewRedactor(Config{RedactKeys: []string{"ssn"}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		key                string
		byDefault, withSSN bool
	}{
		{"api_key", true, true},
		{"GITHUB_PAT", true, true},
		{"X-Auth", true, true},
		{"DB_DSN", true, true},
		{"pwd", true, true},
		{"session_id", true, true},
		{"passphrase", true, true},
		{"SSN", false, true},
		{"path", false, false},
		{"author", false, false},
	}
	for _, tt := range tests {
		if got := defaultRedactor.IsSecretKey(tt.key); got != tt.byDefault {
			t.Errorf("default IsSecretKey(%q) = %v, want %v", tt.key, got, tt.byDefault)
		}
		if got := r.IsSecretKey(tt.key); got != tt.withSSN {
			t.Errorf("IsSecretKey(%q) with ssn configured = %v, want %v", tt.key, got, tt.withSSN)
		}
	}
}

func TestGlobMatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"*", "", true},
		{"a*b", "ab", true},
		{"a*b", "axxb", true},
		{"a*b", "axxbc", false},
		{"a?c", "abc", true},
		{"a?c", "ac", false},
		{"*a*b*", "xxaxxbxx", true},
		{"ü?", "üé", true},
		{"x-*-id", "x--id", true},
	}
	for _, tt := range tests {
		if got := globMatch(tt.pattern, tt.s); got != tt.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
		}
	}
}

func TestForLogsKeepsMessagesButNotSecrets(t *testing.T) {
	t.Parallel()
	r := (*Redactor)(nil).ForLogs()
	msg := "upstream \"db\": initializing: transport closed; its stderr ended with:\nconnecting with Authorization: Bearer sk-abcdefghijklmnopqrstuvwxyz012345\nauth failed"
	got := r.String(msg)
	if strings.Contains(got, "sk-abcdefghijklmnopqrstuvwxyz012345") {
		t.Errorf("ForLogs kept a bearer token: %q", got)
	}
	if !strings.Contains(got, "auth failed") || !strings.Contains(got, "\n") {
		t.Errorf("ForLogs cut a multi-line message: %q", got)
	}
	a := r.ReplaceAttr(nil, slog.String("api_key", "short"))
	if a.Value.String() != Redacted {
		t.Errorf("ForLogs kept a secret-keyed attribute: %v", a)
	}
}

// TestCredentialsTheOldListsMissedAreScrubbed holds credentials that one
// of the two detectors found and the audit redactor did not, before they
// became one (internal/secrets): each reached the log in clear.
func TestCredentialsTheOldListsMissedAreScrubbed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, secret string
	}{
		{"a fine-grained GitHub token", "push with github_pat_11ABCDEFG0123456789_abcdefxyzij", "github_pat_11ABCDEFG0123456789_abcdefxyzij"},
		{"a short classic GitHub token", "token ghp_abcdefghij012345", "ghp_abcdefghij012345"},
		{"an npm token", "npm_" + strings.Repeat("a", 36), "npm_" + strings.Repeat("a", 36)},
		{"a Hugging Face token", "hf_" + strings.Repeat("b", 34), "hf_" + strings.Repeat("b", 34)},
		{"a Stripe key", "sk_live_abcdefghijklmnop1234", "sk_live_abcdefghijklmnop1234"},
		{"a PEM private key's first line", "-----BEGIN RSA PRIVATE KEY-----MIIEowIBAAKCAQEA", "MIIEowIBAAKCAQEA"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, r := range []*Redactor{defaultRedactor, defaultRedactor.ForLogs()} {
				if got := r.String(tt.in); strings.Contains(got, tt.secret) {
					t.Errorf("String(%q) = %q keeps the secret", tt.in, got)
				}
			}
		})
	}
}

// TestSecretKeysTheImporterKnewAreRedacted holds keys the client-config
// importer treated as secret and the audit redactor did not.
func TestSecretKeysTheImporterKnewAreRedacted(t *testing.T) {
	t.Parallel()
	got := defaultRedactor.Arguments(map[string]any{"GITLAB_PAT": "glp", "DB_PWD": "pw", "x-auth": "a", "SENTRY_DSN": "https://k@s/1", "path": "/srv"})
	want := map[string]any{"GITLAB_PAT": Redacted, "DB_PWD": Redacted, "x-auth": Redacted, "SENTRY_DSN": Redacted, "path": "/srv"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Arguments (-want +got):\n%s", diff)
	}
}
