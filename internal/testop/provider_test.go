package testop

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
)

func TestTokenIsAJWTForTheUserAndResource(t *testing.T) {
	t.Parallel()
	p := Start(t, nil)
	tok, err := p.Token(t.Context(), Alice.ID, ClientJWT)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("token %q is not a JWS", tok)
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims struct {
		Iss    string   `json:"iss"`
		Sub    string   `json:"sub"`
		Aud    []string `json:"aud"`
		Groups []string `json:"groups"`
	}
	if err := json.Unmarshal(raw, &claims); err != nil {
		t.Fatal(err)
	}
	t.Logf("claims: %s", raw)
	if claims.Iss != p.Issuer || claims.Sub != Alice.ID || len(claims.Aud) != 1 || claims.Aud[0] != Resource || len(claims.Groups) != 1 || claims.Groups[0] != "eng" {
		t.Errorf("claims = %+v", claims)
	}
}

func TestUnknownUserGetsNoToken(t *testing.T) {
	t.Parallel()
	p := Start(t, nil)
	if _, err := p.Token(t.Context(), "mallory", ClientJWT); err == nil {
		t.Error("got a token for a user the provider does not have")
	}
}

func TestOpaqueClientGetsAnOpaqueToken(t *testing.T) {
	t.Parallel()
	p := Start(t, nil)
	tok, err := p.Token(t.Context(), Bob.ID, ClientOpaque)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(tok, ".") == 2 {
		t.Errorf("token %q of an opaque client looks like a JWT", tok)
	}
}
