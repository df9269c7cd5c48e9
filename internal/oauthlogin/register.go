package oauthlogin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/mcpwarden/mcpwarden/internal/textcut"
	"github.com/mcpwarden/mcpwarden/internal/tokenstore"
)

// clientName and clientURI describe mcpwarden to the authorization
// servers it registers at, which may show them to the person signing in.
const (
	clientName = "mcpwarden"
	clientURI  = "https://github.com/mcpwarden/mcpwarden"
)

// register registers mcpwarden as a public client at endpoint (RFC 7591),
// with the loopback redirect and the scopes of the login. It is a native
// application (OpenID Connect Dynamic Client Registration's
// application_type, which the 2026-07-28 MCP authorization spec requires):
// a provider that took it for "web", the default, could refuse the
// loopback redirect URI. The Client has no Issuer; the caller knows it.
func register(ctx context.Context, client *http.Client, endpoint, redirect string, scopes []string) (*tokenstore.Client, error) {
	reg := map[string]any{
		"client_name":                clientName,
		"client_uri":                 clientURI,
		"application_type":           "native",
		"redirect_uris":              []string{redirect},
		"token_endpoint_auth_method": "none",
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
	}
	if len(scopes) > 0 {
		reg["scope"] = strings.Join(scopes, " ")
	}
	body, err := json.Marshal(reg)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadata))
	if err != nil {
		return nil, fmt.Errorf("reading the answer of %s: %w", endpoint, err)
	}
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		var refusal struct {
			Error       string `json:"error"`
			Description string `json:"error_description"`
		}
		why, _ := textcut.Head(strings.TrimSpace(string(data)), 300)
		if json.Unmarshal(data, &refusal) == nil && refusal.Error != "" {
			why, _ = textcut.Head(refusal.Error+": "+refusal.Description, 300)
		}
		return nil, fmt.Errorf("%s refused the registration (%s): %s; name a client registered by hand in the server's oauth block (client_id)", endpoint, resp.Status, why)
	}
	var got struct {
		ID         string `json:"client_id"`
		Secret     string `json:"client_secret"`
		AuthMethod string `json:"token_endpoint_auth_method"`
	}
	if err := json.Unmarshal(data, &got); err != nil {
		return nil, fmt.Errorf("reading the answer of %s: %w", endpoint, err)
	}
	if got.ID == "" {
		return nil, fmt.Errorf("the answer of %s has no client_id", endpoint)
	}
	return &tokenstore.Client{ID: got.ID, Secret: got.Secret, AuthMethod: got.AuthMethod}, nil
}
