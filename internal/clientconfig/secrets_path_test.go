package clientconfig

import "testing"

// TestLongPathArgumentIsNotTakenForAKey: a path of 64 base64 characters
// (a temporary directory) read as a private key's body line, so import
// replaced a server's argument with ${FS_TOKEN}. A key written out still is
// found.
func TestLongPathArgumentIsNotTakenForAKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		value  string
		secret bool
	}{
		{"a temporary directory of 64 characters", "/tmp/TestImportWriteRewritesTheClientAndKeepsABackup81137688/001", false},
		{"a path of 70 characters", "/home/someone/Projects/AVeryLongProjectNameThatGoesOnAndOn1234/src/xyz", false},
		{"a key's body lines", "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\nVTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n", true},
		{"a key with its BEGIN line", "-----BEGIN RSA PRIVATE KEY-----\\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := len(literalSecrets(tt.value)) > 0; got != tt.secret {
				t.Errorf("literalSecrets(%q) found a secret: %v, want %v", tt.value, got, tt.secret)
			}
		})
	}
}
