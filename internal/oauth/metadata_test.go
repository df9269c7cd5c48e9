package oauth

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMetadataURLInsertsTheWellKnownPrefix(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, resource, want string
		wantErr              bool
	}{
		{"A resource at /mcp gets /.well-known/oauth-protected-resource/mcp.", "https://h.example/mcp", "https://h.example/.well-known/oauth-protected-resource/mcp", false},
		{"A trailing slash is dropped.", "https://h.example/mcp/", "https://h.example/.well-known/oauth-protected-resource/mcp", false},
		{"A resource at the root gets the bare well-known path.", "https://h.example", "https://h.example/.well-known/oauth-protected-resource", false},
		{"The port is kept.", "http://127.0.0.1:8080/mcp", "http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp", false},
		{"A resource with a query is refused.", "https://h.example/mcp?x=1", "", true},
		{"A resource that is not a URL is refused.", "api://mcpwarden", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := MetadataURL(tt.resource)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("MetadataURL(%q) = %q, %v; want %q", tt.resource, got, err, tt.want)
			}
		})
	}
}

func TestMetadataHandlerServesRFC9728(t *testing.T) {
	t.Parallel()
	v, err := New(Config{Issuer: "https://idp.example", Audience: "https://h.example/mcp", RequiredScopes: []string{"mcp:tools"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := MetadataHandler(v.Metadata())
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, v.MetadataPath(), nil))
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("got %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	var got map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"resource":                 "https://h.example/mcp",
		"authorization_servers":    []any{"https://idp.example"},
		"scopes_supported":         []any{"mcp:tools"},
		"bearer_methods_supported": []any{"header"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("metadata (-want +got):\n%s", diff)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST got %d, want 405", rec.Code)
	}
}

func TestResourceURLIsTheAudienceUnlessSet(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, audience, resource, wantResource, wantURL, wantErr string
	}{
		{"An audience that is the /mcp URL is the resource.", "https://h.example/mcp", "", "https://h.example/mcp", "https://h.example/.well-known/oauth-protected-resource/mcp", ""},
		{"A resource set apart from an api:// audience is used.", "api://mcpwarden", "https://h.example/mcp", "https://h.example/mcp", "https://h.example/.well-known/oauth-protected-resource/mcp", ""},
		{"An api:// audience without a resource is refused.", "api://mcpwarden", "", "", "", "auth.oauth.resource: required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, err := New(Config{Issuer: "https://idp.example", Audience: tt.audience, Resource: tt.resource}, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := v.Metadata().Resource; got != tt.wantResource {
				t.Errorf("resource = %q, want %q", got, tt.wantResource)
			}
			if got := v.MetadataURL(); got != tt.wantURL {
				t.Errorf("metadata URL = %q, want %q", got, tt.wantURL)
			}
		})
	}
}
