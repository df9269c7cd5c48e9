package oauthlogin

// What the login needs to know before it asks anyone to sign in and that
// mcp-go's discovery does not tell: the scope the server wants (the MCP
// authorization spec's scope selection: the challenge's scope, else the
// resource's scopes_supported, else none), and what the authorization
// server's metadata says beyond what mcp-go reads (issuer.go).

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/mcpwarden/mcpwarden/internal/wwwauth"
)

// maxMetadata caps a metadata document's size.
const maxMetadata = 1 << 20

// probe asks the server for nothing without a token, so that its 401
// names its resource metadata (RFC 9728 §5.1) and the scope it wants; a
// server that does not answer 401 leaves discovery to the well-known URLs
// and gives the zero challenge. header is the 401's header, for mcp-go's
// discovery (transport.OAuthHandler.HandleUnauthorizedResponse).
func probe(ctx context.Context, client *http.Client, serverURL string) (c wwwauth.Challenge, header http.Header) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, serverURL, strings.NewReader(`{"jsonrpc":"2.0","id":0,"method":"ping"}`))
	if err != nil {
		return wwwauth.Challenge{}, nil
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		return wwwauth.Challenge{}, nil
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxMetadata))
	if resp.StatusCode != http.StatusUnauthorized {
		return wwwauth.Challenge{}, nil
	}
	return wwwauth.Parse(resp.Header.Values("WWW-Authenticate")), resp.Header
}

// A resource is what the server's protected resource metadata (RFC 9728)
// says, and whether it was found only at the root well-known URL; the
// zero resource when it was not found.
type resource struct {
	found           bool
	atRoot          bool
	scopesSupported []string
}

// findResource reads the server's protected resource metadata at the
// first of resourceMetadataURLs that has it.
func findResource(ctx context.Context, client *http.Client, serverURL string, c wwwauth.Challenge) resource {
	var prm struct {
		ScopesSupported []string `json:"scopes_supported"`
	}
	urls := resourceMetadataURLs(serverURL, c.ResourceMetadata)
	for i, u := range urls {
		if getJSON(ctx, client, u, &prm) {
			return resource{found: true, atRoot: i == len(urls)-1, scopesSupported: prm.ScopesSupported}
		}
	}
	return resource{}
}

// chooseScopes is the scope to ask for when the config names none: the
// one the server's challenge asks for, else every scope its protected
// resource metadata lists, else none (the scope parameter is left out).
func chooseScopes(c wwwauth.Challenge, r resource) []string {
	if s := strings.Fields(c.Scope); len(s) > 0 {
		return s
	}
	return r.scopesSupported
}

// discoverWith sets up h's discovery for the server at serverURL: from
// the probe's 401 header, which may name the metadata, else at the
// path-based well-known URL, both of which mcp-go tries. Metadata found
// only at the root well-known URL, which mcp-go does not try, describes
// the server's origin (RFC 9728 §3.1): h then discovers from the origin,
// and mcp-go still requires the resource the metadata declares to be
// that origin (a prefix of serverURL), so a token is never asked for a
// resource other than the server. A server with no resource metadata at
// all is one of 2025-03-26, whose authorization base URL is its URL with
// the path removed: h discovers the authorization server's metadata at
// the origin's well-known URLs, and falls back to the default endpoints
// there only when it has none.
func discoverWith(h *transport.OAuthHandler, serverURL string, r resource, header http.Header) {
	if !r.found || r.atRoot {
		if u, err := url.Parse(serverURL); err == nil {
			h.SetBaseURL(u.Scheme + "://" + u.Host)
		}
	}
	if r.found {
		h.HandleUnauthorizedResponse(&http.Response{Header: header})
	}
}

// currentIssuer is the issuer of the authorization server the server at
// serverURL names now, found as a login finds it.
func currentIssuer(ctx context.Context, client *http.Client, serverURL string) (string, error) {
	ch, header := probe(ctx, client, serverURL)
	h := transport.NewOAuthHandler(transport.OAuthConfig{HTTPClient: client})
	h.SetBaseURL(serverURL)
	discoverWith(h, serverURL, findResource(ctx, client, serverURL, ch), header)
	md, err := h.GetServerMetadata(ctx)
	if err != nil {
		return "", err
	}
	return md.Issuer, nil
}

// resourceMetadataURLs are where the server's protected resource metadata
// may be, in the order RFC 9728 and the MCP spec try them: the URL its
// challenge named (only on the server's own origin, as mcp-go requires
// too), the path-based well-known URL, the root one.
func resourceMetadataURLs(serverURL, advertised string) []string {
	base, err := url.Parse(serverURL)
	if err != nil || base.Host == "" {
		return nil
	}
	var out []string
	if a, err := url.Parse(advertised); err == nil && advertised != "" &&
		strings.EqualFold(a.Scheme, base.Scheme) && strings.EqualFold(a.Host, base.Host) {
		out = append(out, advertised)
	}
	origin := base.Scheme + "://" + base.Host
	const wk = "/.well-known/oauth-protected-resource"
	if p := strings.TrimSuffix(base.EscapedPath(), "/"); p != "" {
		out = append(out, origin+wk+p)
	}
	return append(out, origin+wk)
}

// authServerMetadataURLs are the metadata URLs of issuer: the well-known
// path inserted before the issuer's path (RFC 8414 §3.1, both documents),
// then OpenID's appended after it.
func authServerMetadataURLs(issuer string) []string {
	u, err := url.Parse(issuer)
	if err != nil || u.Host == "" {
		return nil
	}
	origin := u.Scheme + "://" + u.Host
	p := strings.TrimSuffix(u.EscapedPath(), "/")
	out := []string{
		origin + "/.well-known/oauth-authorization-server" + p,
		origin + "/.well-known/openid-configuration" + p,
	}
	if p != "" {
		out = append(out, origin+p+"/.well-known/openid-configuration")
	}
	return out
}

// getJSON decodes the JSON document at u into dst, and reports whether
// it got one (a 200 whose body decodes).
func getJSON(ctx context.Context, client *http.Client, u string, dst any) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false
	}
	return json.NewDecoder(io.LimitReader(resp.Body, maxMetadata)).Decode(dst) == nil
}
