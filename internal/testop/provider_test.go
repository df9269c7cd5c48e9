package testop

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
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

func TestRefreshTokenIsIssuedAndRotated(t *testing.T) {
	t.Parallel()
	p := Start(t, nil)
	tok, err := p.Login(t.Context(), Alice.ID, ClientJWT, "offline_access")
	if err != nil {
		t.Fatal(err)
	}
	if tok.RefreshToken == "" {
		t.Fatal("no refresh token for offline_access")
	}
	refresh := func(rt string) (*http.Response, error) {
		form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}}
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, p.handler.TokenEndpoint().Absolute(p.Issuer), strings.NewReader(form.Encode()))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(ClientJWT.ID, ClientJWT.Secret)
		return http.DefaultClient.Do(req)
	}
	resp, err := refresh(tok.RefreshToken)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("refresh: %s", resp.Status)
	}
	resp, err = refresh(tok.RefreshToken)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		t.Error("a spent refresh token was accepted again")
	}
}
