package oauth

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestChallengeFollowsRFC6750(t *testing.T) {
	t.Parallel()
	const meta = "https://h/.well-known/oauth-protected-resource/mcp"
	tests := []struct {
		name       string
		err        error
		scopes     []string
		wantStatus int
		wantHeader string
	}{
		{"A request without a token gets no error code.", ErrNoToken, nil, 401,
			`Bearer resource_metadata="` + meta + `"`},
		{"A bad token gets invalid_token.", invalidToken("the token has expired: get a new one", nil), nil, 401,
			`Bearer resource_metadata="` + meta + `", error="invalid_token", error_description="the token has expired: get a new one"`},
		{"A token without a scope gets insufficient_scope, 403 and the scope hint.", &Error{Code: CodeInsufficientScope, Description: "lacks mcp:tools"}, []string{"mcp:tools", "mcp:read"}, 403,
			`Bearer resource_metadata="` + meta + `", error="insufficient_scope", error_description="lacks mcp:tools", scope="mcp:tools mcp:read"`},
		{"Two Authorization headers get invalid_request and 400.", &Error{Code: CodeInvalidRequest, Description: "one"}, nil, 400,
			`Bearer resource_metadata="` + meta + `", error="invalid_request", error_description="one"`},
		{"An error of another kind is an invalid token.", errors.New("boom"), nil, 401,
			`Bearer resource_metadata="` + meta + `", error="invalid_token", error_description="the token could not be verified"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := NewChallenge(tt.err, meta, tt.scopes)
			if c.Status != tt.wantStatus || c.Header != tt.wantHeader {
				t.Errorf("got %d %s\nwant %d %s", c.Status, c.Header, tt.wantStatus, tt.wantHeader)
			}
			rec := httptest.NewRecorder()
			c.Write(rec)
			if rec.Code != tt.wantStatus || rec.Header().Get("WWW-Authenticate") != tt.wantHeader || rec.Body.Len() == 0 {
				t.Errorf("written: %d %q %q", rec.Code, rec.Header().Get("WWW-Authenticate"), rec.Body)
			}
		})
	}
}

func TestChallengeQuotingCannotInjectParameters(t *testing.T) {
	t.Parallel()
	c := NewChallenge(&Error{Code: CodeInvalidToken, Description: "x\", error=\"none\r\nSet-Cookie: a=b\\"}, `https://h/"m`, []string{`a"b`})
	want := `Bearer resource_metadata="https://h/\"m", error="invalid_token", error_description="x\", error=\"noneSet-Cookie: a=b\\", scope="a\"b"`
	if c.Header != want {
		t.Errorf("header = %s\nwant     %s", c.Header, want)
	}
}

func TestBearerToken(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		headers  []string
		want     string
		wantCode ErrorCode
		wantErr  bool
	}{
		{"A request without Authorization has no token.", nil, "", CodeNone, true},
		{"A Bearer token is read.", []string{"Bearer abc.DEF-_~+/="}, "abc.DEF-_~+/=", "", false},
		{"The scheme is case-insensitive.", []string{"bEARER tok"}, "tok", "", false},
		{"Basic credentials are no token.", []string{"Basic dXNlcjpwYXNz"}, "", CodeNone, true},
		{"Two headers are a bad request.", []string{"Bearer a", "Bearer b"}, "", CodeInvalidRequest, true},
		{"An empty token is invalid.", []string{"Bearer "}, "", CodeInvalidToken, true},
		{"A token with a space is invalid.", []string{"Bearer a b"}, "", CodeInvalidToken, true},
		{"A token with a comma is invalid.", []string{"Bearer a,b"}, "", CodeInvalidToken, true},
		{"A token with padding inside is invalid.", []string{"Bearer a=b"}, "", CodeInvalidToken, true},
		{"A token of only padding is invalid.", []string{"Bearer ="}, "", CodeInvalidToken, true},
		{"A token of 64 KiB is invalid.", []string{"Bearer " + strings.Repeat("a", 64<<10)}, "", CodeInvalidToken, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			for _, h := range tt.headers {
				r.Header.Add("Authorization", h)
			}
			got, err := BearerToken(r)
			if tt.wantErr {
				var e *Error
				if !errors.As(err, &e) || e.Code != tt.wantCode {
					t.Fatalf("err = %v, want code %q", err, tt.wantCode)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func FuzzBearerToken(f *testing.F) {
	for _, s := range []string{"Bearer abc", "bearer a.b.c", "Bearer a b", "Basic x", "Bearer =", "Bearer a==", "Bearer a\r\nb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header["Authorization"] = []string{header}
		tok, err := BearerToken(r)
		if err != nil {
			c := NewChallenge(err, "https://h/m", []string{header})
			if strings.ContainsAny(c.Header, "\r\n\x00") {
				t.Fatalf("challenge header %q holds a control character", c.Header)
			}
			return
		}
		if tok == "" || strings.ContainsAny(tok, " \t\r\n\",;\\") || len(tok) > maxTokenBytes {
			t.Fatalf("BearerToken(%q) = %q, not a b64token", header, tok)
		}
	})
}
