package secrets

import (
	"strings"
	"testing"
)

// TestRedactFindsTheUnionOfBothDetectors holds every credential format the
// audit redactor or the client-config importer found before they became
// this one detector.
func TestRedactFindsTheUnionOfBothDetectors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want string
		kind Kind
	}{
		{"a bearer header", "Authorization: Bearer abcdef123456", "Authorization: Bearer <m>", AuthHeader},
		{"a basic header", "Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic <m>", AuthHeader},
		{"a URL password", "https://bob:hunter22@example.com/x", "https://bob:<m>@example.com/x", URLPassword},
		{"a connection string", "postgres://u:pw123@h/db", "postgres://u:<m>@h/db", URLPassword},
		{"a URL password without a user", "redis://:pw123456@h", "redis://:<m>@h", URLPassword},
		{"the shortest URL password", "x://:p@", "x://:<m>@", URLPassword},
		{"a key in a query", "https://a.example/x?api_key=zzz&q=1", "https://a.example/x?api_key=<m>&q=1", QueryParam},
		{"a classic GitHub token", "ghp_abcdefghijklmnopqrstuvwxyz0123", "<m>", Token},
		{"a short GitHub token", "gho_abcdefghijklmnop", "<m>", Token},
		{"a fine-grained GitHub token", "github_pat_11ABCDEFG0123456789_abcdef", "<m>", Token},
		{"a GitLab token", "glpat-abcdefghijklmnop1234", "<m>", Token},
		{"a Slack token", "xoxb-1234567890-abcdef", "<m>", Token},
		{"an OpenAI key", "sk-abcdefghijklmnopqrstu", "<m>", Token},
		{"a Stripe key", "sk_live_abcdefghijklmnop1234", "<m>", Token},
		{"an AWS access key id", "AKIAABCDEFGHIJKLMNOP", "<m>", Token},
		{"a Google API key", "AIza" + strings.Repeat("b", 35), "<m>", Token},
		{"an npm token", "npm_" + strings.Repeat("c", 36), "<m>", Token},
		{"a Hugging Face token", "hf_" + strings.Repeat("d", 34), "<m>", Token},
		{"a JWT", "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig", "jwt <m>", Token},
		{"a JWT without a signature", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0", "<m>", Token},
		{"a PEM private key", "k=-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\nrest", "k=<m>\nrest", PrivateKey},
		{"the first line of a PEM private key", "-----BEGIN OPENSSH PRIVATE KEY-----", "<m>", PrivateKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Redact(tt.in, "<m>"); got != tt.want {
				t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if !Contains(tt.in) {
				t.Errorf("Contains(%q) = false, want true", tt.in)
			}
			found := Find(tt.in)
			if len(found) == 0 || found[0].Kind != tt.kind {
				t.Fatalf("Find(%q) = %+v, want a %v first", tt.in, found, tt.kind)
			}
		})
	}
}

func TestHarmlessTextIsKept(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
	}{
		{"a short string", "ghp_x"},
		{"the word basic alone", "Basic authentication is used"},
		{"the word bearer alone", "the bearer of bad news"},
		{"a URL without a password", "https://example.com/a?q=1"},
		{"a public key", "-----BEGIN PUBLIC KEY-----"},
		{"a task name", "task-abcdefghijklmnopqrstuvwxyz"},
		{"a mask with dollars", "$1 ${1}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Redact(tt.in, "<m>"); got != tt.in {
				t.Errorf("Redact(%q) = %q, want it unchanged", tt.in, got)
			}
			if Contains(tt.in) || len(Find(tt.in)) != 0 {
				t.Errorf("Contains or Find reports a credential in %q", tt.in)
			}
		})
	}
}

func TestRedactTakesTheMaskLiterally(t *testing.T) {
	t.Parallel()
	if got, want := Redact("Bearer abcdef123456", "$1${s}"), "Bearer $1${s}"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestFindSpansTheSecretOnly(t *testing.T) {
	t.Parallel()
	in := "curl -H 'Authorization: Bearer abcdef123456' https://bob:hunter22@example.com/x?api_key=zzz9&q=1"
	var got []string
	for _, m := range Find(in) {
		got = append(got, m.Kind.String()+"="+in[m.Start:m.End])
	}
	want := []string{"auth_header=abcdef123456", "url_password=hunter22", "query_param=zzz9"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("Find = %q, want %q", got, want)
	}
}

func FuzzRedact(f *testing.F) {
	for _, s := range []string{"Bearer abcdef123456", "https://u:p@h", "ghp_abcdefghijklmnopqrstuvwxyz0123", "-----BEGIN EC PRIVATE KEY-----\nx", "?token=a&key=b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		const mask = "\x00MASK\x00"
		out := Redact(s, mask)
		for _, m := range Find(s) {
			if m.Start < 0 || m.End > len(s) || m.Start > m.End {
				t.Fatalf("Find(%q) gave span %d..%d", s, m.Start, m.End)
			}
		}
		if len(Find(s)) == 0 && out != s {
			t.Fatalf("Redact(%q) = %q though Find found nothing", s, out)
		}
		if Contains(s) != (len(Find(s)) > 0) {
			t.Fatalf("Contains(%q) disagrees with Find", s)
		}
		if again := Redact(out, mask); again != out {
			t.Fatalf("Redact is not idempotent on %q: %q then %q", s, out, again)
		}
	})
}

// TestRedactingTwiceChangesNothing: a query value the assignment pattern
// carried past a '#' was redacted, and a second pass then took the comma
// after the mask into the query value (FuzzRedact's finding). A query
// value ends before trailing commas, which are the sentence's, so a text
// redacted once is left as it is; and where a later pattern's mask still
// ends a value an earlier one stopped short of, Redact passes again.
func TestRedactingTwiceChangesNothing(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"a value the assignment carries past a fragment mark", "&token=00AAA0AAA#000,", "&token=[m],"},
		{"a query value before a comma of the sentence", "see https://h/?token=abcdef123, then", "see https://h/?token=[m], then"},
		{"commas inside a query value are the value's", "https://h/?token=abc,def,ghi&x=1", "https://h/?token=[m]&x=1"},
		{"a query value the assignment reads past a fragment mark it starts with", "&token=#00000,0", "&token=[m]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			once := Redact(tt.in, "[m]")
			if once != tt.want {
				t.Errorf("Redact(%q) = %q, want %q", tt.in, once, tt.want)
			}
			if twice := Redact(once, "[m]"); twice != once {
				t.Errorf("Redact(%q) again = %q, want it unchanged", once, twice)
			}
		})
	}
}
