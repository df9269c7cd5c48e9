package scan

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// The credentials of the tests: made up, in the formats the detector
// knows (as proxy's leaking upstream returns them).
const (
	awsKey     = "AKIAIOSFODNN7EXAMPLE"
	githubPAT  = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
	pemKey     = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAzLeakedKeyBody\n-----END RSA PRIVATE KEY-----"
	leakedText = "config dump: aws_access_key_id=" + awsKey + " token " + githubPAT + "\n" + pemKey + "\nend"
)

// binaryLeak is bytes that are not text — a header and NULs — around the
// credentials, as in a binary file that embeds a key.
var binaryLeak = "\x89BIN\x00\x01\x02" + leakedText + "\x00\xff"

func TestCleanResultIsForwardedByteForByte(t *testing.T) {
	t.Parallel()
	raw := []byte(`{"content":[{"type":"text","text":"no secrets \"here\" \u00e9"}],"structuredContent":{"a":[1,true,null]}}`)
	out, scan := JSON(raw, true)
	if scan.Found() || &out[0] != &raw[0] {
		t.Errorf("a clean result was changed: %s, %v", out, scan.kinds)
	}
}

func BenchmarkScanJSON(b *testing.B) {
	for _, size := range []int{1 << 10, 1 << 20} {
		text := strings.Repeat("plain words of a page\n", size/22)
		raw, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}})
		b.Run(fmt.Sprintf("%dKiB clean", size>>10), func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				JSON(raw, true)
			}
		})
	}
}

// TestSecretNamedMemberOfStructuredContentIsRedacted is the structured
// variant of attack 5: a result's text and its structuredContent carry the
// same JSON, and the text's "password": "…" is a secret-named assignment;
// the member is one too, or the model reads it there.
func TestSecretNamedMemberOfStructuredContentIsRedacted(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"a member of structured content", `{"structuredContent":{"db":{"password":"hunter22","user":"app"}}}`,
			`{"structuredContent":{"db":{"password":"[redacted]","user":"app"}}}`},
		{"an AWS secret with white space", `{"AWS_SECRET_ACCESS_KEY" : "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}`,
			`{"AWS_SECRET_ACCESS_KEY" : "[redacted]"}`},
		{"the same JSON as text", `{"content":[{"type":"text","text":"{\"password\": \"hunter22\"}"}]}`,
			`{"content":[{"type":"text","text":"{\"password\": \"[redacted]\"}"}]}`},
		{"short and non-string values", `{"max_tokens":4096,"keyword":"go","token":{"user":"app"}}`,
			`{"max_tokens":4096,"keyword":"go","token":{"user":"app"}}`},
		// Names IsSecretKey calls secret for the audit log, whose values a
		// tool needs the model to see: a pagination cursor, an object's
		// key, a keyword, a function's signature.
		{"a cursor, an object key, a keyword, a signature",
			`{"nextPageToken":"CiAKGjBpNDd2Nmp2Zml2cXRwYjBpOXA","key":"photos/2024/beach.jpg","keyword":"golang","signature":"func Open(name string) (*File, error)"}`,
			`{"nextPageToken":"CiAKGjBpNDd2Nmp2Zml2cXRwYjBpOXA","key":"photos/2024/beach.jpg","keyword":"golang","signature":"func Open(name string) (*File, error)"}`},
		{"the same as text assignments", `{"content":[{"type":"text","text":"next_page_token: CiAKGjBpNDd2\nsort_key = created_at_desc\n"}]}`,
			`{"content":[{"type":"text","text":"next_page_token: CiAKGjBpNDd2\nsort_key = created_at_desc\n"}]}`},
		{"an API key and a token are still redacted", `{"OPENAI_API_KEY":"not-a-known-format-1234","GITHUB_TOKEN":"abcdef123456"}`,
			`{"OPENAI_API_KEY":"[redacted]","GITHUB_TOKEN":"[redacted]"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, _ := JSON([]byte(tt.in), true)
			if string(got) != tt.want {
				t.Errorf("JSON(%s) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestRedactedBlobStaysBase64WithTheRestOfItsBytes(t *testing.T) {
	t.Parallel()
	blob := base64.StdEncoding.EncodeToString([]byte(binaryLeak))
	raw := []byte(`{"content":[{"type":"resource","resource":{"uri":"file:///x","blob":"` + blob + `"}}]}`)
	out, scan := JSON(raw, true)
	if !scan.Found() {
		t.Fatal("nothing found in the blob")
	}
	var res struct {
		Content []struct {
			Resource struct{ Blob string } `json:"resource"`
		} `json:"content"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	data, err := base64.StdEncoding.DecodeString(res.Content[0].Resource.Blob)
	if err != nil {
		t.Fatalf("the redacted blob is not base64: %v", err)
	}
	if got := string(data); !strings.HasPrefix(got, "\x89BIN\x00") || !strings.Contains(got, Mask) || strings.Contains(got, awsKey) {
		t.Errorf("the blob reads %q, want the bytes kept and the credentials masked", got)
	}
}

func TestBlobMemberNameIsNotTakenForABlob(t *testing.T) {
	t.Parallel()
	// A member named "blob" whose value is an object, and a string value
	// "blob" followed by another string: neither makes the next string a
	// blob to decode, and nothing is found.
	raw := []byte(`{"a":"blob","b":"` + base64.StdEncoding.EncodeToString([]byte("plain")) + `","blob":{"x":"y"}}`)
	if out, scan := JSON(raw, true); scan.Found() || string(out) != string(raw) {
		t.Errorf("JSON changed %s into %s (%v)", raw, out, scan.kinds)
	}
}

func TestSecretInABlobIsFoundWhateverItsBase64Spelling(t *testing.T) {
	t.Parallel()
	data := []byte(binaryLeak + "\xfb\xff") // bytes whose encodings differ by alphabet
	wrapped := base64.StdEncoding.EncodeToString(data)
	var lines []string
	for len(wrapped) > 76 {
		lines, wrapped = append(lines, wrapped[:76]), wrapped[76:]
	}
	lines = append(lines, wrapped)
	tests := []struct {
		name string
		blob string
	}{
		{"padded standard base64", base64.StdEncoding.EncodeToString(data)},
		{"unpadded standard base64", base64.RawStdEncoding.EncodeToString(data)},
		{"base64 with line breaks every 76 characters", strings.Join(lines, "\r\n")},
		{"URL-safe base64", base64.URLEncoding.EncodeToString(data)},
		{"unpadded URL-safe base64", base64.RawURLEncoding.EncodeToString(data)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var scan Findings
			red, ok := scanBlob(tt.blob, &scan)
			if !ok || !scan.Found() {
				t.Fatalf("nothing found in %.60q…", tt.blob)
			}
			got, err := base64.StdEncoding.DecodeString(red)
			if err != nil || strings.Contains(string(got), awsKey) || !strings.Contains(string(got), Mask) {
				t.Errorf("redacted to %q (%v)", got, err)
			}
		})
	}
}
