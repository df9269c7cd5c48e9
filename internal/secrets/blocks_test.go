package secrets

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testKeys returns private keys in every format the scanner knows, each
// as the text of its file: PEM keys generated now (PKCS#1 RSA, SEC1 EC,
// PKCS#8 Ed25519, and an ENCRYPTED PRIVATE KEY's shape), and the OpenSSH,
// PGP and PuTTY samples in testdata (none of them a key anyone uses).
func testKeys(tb testing.TB) map[string]string {
	tb.Helper()
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		tb.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	ecDER, err := x509.MarshalECPrivateKey(ecKey)
	if err != nil {
		tb.Fatal(err)
	}
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	edDER, err := x509.MarshalPKCS8PrivateKey(edKey)
	if err != nil {
		tb.Fatal(err)
	}
	encrypted := make([]byte, 1200)
	if _, err := rand.Read(encrypted); err != nil {
		tb.Fatal(err)
	}
	keys := map[string]string{
		"rsa":       string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsaKey)})),
		"ec":        string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: ecDER})),
		"ed25519":   string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: edDER})),
		"encrypted": string(pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: encrypted})),
	}
	for name, file := range map[string]string{"openssh": "openssh_rsa.key", "pgp": "pgp_private.asc", "putty": "putty_rsa.ppk"} {
		data, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			tb.Fatal(err)
		}
		keys[name] = string(data)
	}
	return keys
}

// keyMaterial returns the lines of key that are base64, key material
// (not the public lines of a PuTTY key).
func keyMaterial(key string) []string {
	var out []string
	public := false
	for _, line := range strings.Split(strings.ReplaceAll(key, "\r", ""), "\n") {
		switch {
		case strings.HasPrefix(line, "Public-Lines:"):
			public = true
		case strings.HasPrefix(line, "Private-Lines:"):
			public = false
		case !public && len(line) >= 16 && runEnd(line, 0, keyLineBytes) == len(line):
			out = append(out, line)
		}
	}
	return out
}

func TestPrivateKeyFragmentsAreRedacted(t *testing.T) {
	t.Parallel()
	keys := testKeys(t)
	lines := func(key string, from, to int) string {
		ls := strings.SplitAfter(key, "\n")
		return strings.Join(ls[max(0, len(ls)+from)%len(ls):min(len(ls), to)], "")
	}
	tests := []struct {
		name string
		in   string
	}{
		{"the tail of an RSA key (read_text_file tail: 7)", lines(keys["rsa"], -8, 100)},
		{"the tail of an RSA key with CRLF line ends", strings.ReplaceAll(lines(keys["rsa"], -8, 100), "\n", "\r\n")},
		{"the middle of an RSA key (offset and limit)", lines(keys["rsa"], 5, 12)},
		{"one body line of an RSA key", lines(keys["rsa"], 3, 4)},
		{"the head of an RSA key", lines(keys["rsa"], 0, 3)},
		{"an ENCRYPTED PRIVATE KEY", keys["encrypted"]},
		{"the tail of an ENCRYPTED PRIVATE KEY", lines(keys["encrypted"], -5, 100)},
		{"an OpenSSH key", keys["openssh"]},
		{"the tail of an OpenSSH key", lines(keys["openssh"], -7, 100)},
		{"the middle of an OpenSSH key", lines(keys["openssh"], 4, 9)},
		{"a PGP private key block", keys["pgp"]},
		{"the tail of a PGP private key block", lines(keys["pgp"], -4, 100)},
		{"a PuTTY key", keys["putty"]},
		{"the private lines of a PuTTY key", lines(keys["putty"], -9, 100)},
		{"an EC key in a sentence", "here it is: " + keys["ec"] + " and that's all"},
		{"an Ed25519 key", keys["ed25519"]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Redact(tt.in, "<m>")
			for _, line := range keyMaterial(tt.in) {
				if strings.Contains(got, line) {
					t.Fatalf("Redact left the key line %q in\n%s", line, got)
				}
			}
			if !Contains(tt.in) {
				t.Errorf("Contains = false, want true")
			}
			if ms := Find(tt.in); len(ms) == 0 || ms[0].Kind != PrivateKey {
				t.Errorf("Find = %+v, want a private_key", ms)
			}
		})
	}
}

func TestPGPPrivateKeyBlockIsRedacted(t *testing.T) {
	t.Parallel()
	key := testKeys(t)["pgp"]
	got := Redact("gpg --export-secret-keys --armor:\n"+key, "<m>")
	if want := "gpg --export-secret-keys --armor:\n<m>\n"; got != want {
		t.Errorf("Redact = %q, want %q", got, want)
	}
}

func TestPuTTYKeyIsRedacted(t *testing.T) {
	t.Parallel()
	key := testKeys(t)["putty"]
	got := Redact(key, "<m>")
	if !strings.HasPrefix(got, "<m>") || strings.Contains(got, "Private-Lines") {
		t.Errorf("Redact = %q, want the key from its header to its MAC masked", got)
	}
}

func TestSecretNamedAssignmentIsRedactedWhole(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{".envrc beside an access key id", "export AWS_ACCESS_KEY_ID=AKIAABCDEFGHIJKLMNOP\nexport AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
			"export AWS_ACCESS_KEY_ID=<m>\nexport AWS_SECRET_ACCESS_KEY=<m>\n"},
		{"an INI credentials file in lower case", "[default]\naws_access_key_id = AKIAABCDEFGHIJKLMNOP\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\r\n",
			"[default]\naws_access_key_id = <m>\naws_secret_access_key = <m>\r\n"},
		{"a .env password", "DB_HOST=db\nDB_PASSWORD=hunter22\n", "DB_HOST=db\nDB_PASSWORD=<m>\n"},
		{"a YAML secret", "client_secret: s3cr3tvalue # rotate", "client_secret: <m> # rotate"},
		{"a quoted YAML token", "api_token: \"abcdef123456\"", "api_token: \"<m>\""},
		{"a JSON member", `{"GITHUB_TOKEN": "abcdef123456", "user": "octocat"}`, `{"GITHUB_TOKEN": "<m>", "user": "octocat"}`},
		{"a value with base64 padding", "SESSION_KEY=c2VjcmV0c2VjcmV0==\n", "SESSION_KEY=<m>\n"},
		{"an assignment named in prose", "set it with: PASSWORD=hunter22", "set it with: PASSWORD=<m>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Redact(tt.in, "<m>"); got != tt.want {
				t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestHarmlessLookalikesAreKept(t *testing.T) {
	t.Parallel()
	cert := "-----BEGIN CERTIFICATE-----\n" + strings.Repeat("MIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJ\n", 5) + "AbC=\n-----END CERTIFICATE-----\n"
	tests := []struct {
		name string
		in   string
	}{
		{"a sha256 hex digest on its line", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"},
		{"sha256 digests one a line", strings.Repeat("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n", 3)},
		{"a sha256sum line", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  go.sum\n"},
		{"a git hash", "commit 9816d61c1b2b0a4e3f5a6c7d8e9f00112233abcd\nAuthor: a"},
		{"a UUID", "id: 123e4567-e89b-12d3-a456-426614174000\n"},
		{"prose", "The key to the design is that a token of trust is never assumed.\nPasswords are checked.\n"},
		{"a certificate", cert},
		{"a base64 blob on one line", strings.Repeat("QUJD", 100)},
		{"MIME base64 in lines of 76", strings.Repeat(strings.Repeat("QUJD", 19)+"\n", 4)},
		{"a short secret-named value", "max_tokens: 4096\nskip_auth=false\n"},
		{"an auth header", "Authorization: Basic"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Redact(tt.in, "<m>"); got != tt.in {
				t.Errorf("Redact(%q) = %q, want it unchanged", tt.in, got)
			}
		})
	}
}

// FuzzCredentialFragmentsAreFound cuts keys of every format at any line or
// byte offsets, as head, tail, offset and limit arguments do, and holds
// the scanner to finding every fragment of meaningful size: one that holds
// a whole body line, the BEGIN line, the END line or a PuTTY header. Such
// a fragment must keep none of its key lines' text after Redact; shorter
// fragments (a part of two lines, at most 2 × 69 characters of a key) are
// not claimed.
func FuzzCredentialFragmentsAreFound(f *testing.F) {
	keys := testKeys(f)
	names := []string{"rsa", "ec", "ed25519", "encrypted", "openssh", "pgp", "putty"}
	for i := range names {
		f.Add(uint8(i), uint16(0), uint16(7), true, false)
		f.Add(uint8(i), uint16(60000), uint16(7), true, true)
		f.Add(uint8(i), uint16(100), uint16(300), false, false)
	}
	f.Fuzz(func(t *testing.T, which uint8, from, n uint16, byLine, crlf bool) {
		key := keys[names[int(which)%len(names)]]
		if crlf {
			key = strings.ReplaceAll(key, "\n", "\r\n")
		}
		var frag string
		if byLine {
			ls := strings.SplitAfter(key, "\n")
			a := int(from) % len(ls)
			frag = strings.Join(ls[a:min(len(ls), a+int(n))], "")
		} else {
			a := int(from) % len(key)
			frag = key[a:min(len(key), a+int(n))]
		}
		meaningful := false
		for _, line := range strings.Split(strings.ReplaceAll(key, "\r", ""), "\n") {
			isBody := (len(line) == 64 || len(line) == 70) && runEnd(line, 0, keyBase64) == len(line)
			isMark := strings.HasPrefix(line, "-----") || strings.HasPrefix(line, "PuTTY-User-Key-File-")
			if (isBody || isMark) && strings.Contains(frag, line) {
				meaningful = true
			}
		}
		if !meaningful {
			return
		}
		got := Redact(frag, "\x00")
		for _, line := range keyMaterial(key) {
			for i := 0; i+16 <= len(line); i++ {
				if strings.Contains(got, line[i:i+16]) {
					t.Fatalf("Redact(%q) = %q keeps %q of the key", frag, got, line[i:i+16])
				}
			}
		}
	})
}
