package approvals

import (
	"crypto/hmac"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/state"
)

var askForResolver = Request{ID: "r1", Tool: "mcp:fs:write_file", Server: "fs", Rule: "mcp:fs:write_file", Arguments: map[string]any{"path": "/tmp/x"}}

// script writes an executable shell script and returns its path.
func script(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "resolver.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCommandResolver(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		body    string
		want    state.Answer
		wantErr string
	}{
		{"allow once", `cat >/dev/null; echo '{"decision":"allow_once"}'`, state.AllowOnce, ""},
		{"allow for the session", `echo '{"decision": "allow_session"}'`, state.AllowSession, ""},
		{"deny", `echo '{"decision":"deny"}'`, state.Deny, ""},
		{"garbage denies", `echo 'sure, go ahead'`, state.Deny, "not {"},
		{"an unknown decision denies", `echo '{"decision":"allow"}'`, state.Deny, "unknown decision"},
		{"no output denies", `true`, state.Deny, "not {"},
		{"a failing program denies even with an allow", `echo '{"decision":"allow_once"}'; echo oops >&2; exit 3`, state.Deny, "oops"},
		{"a timeout denies", `sleep 30; echo '{"decision":"allow_once"}'`, state.Deny, "no answer within"},
		{"a timeout kills the children too", `(sleep 30; echo '{"decision":"allow_once"}') & wait`, state.Deny, "no answer within"},
		{"the ask arrives on stdin", `grep -q '"tool":"mcp:fs:write_file"' && echo '{"decision":"allow_once"}'`, state.AllowOnce, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := &Command{Argv: []string{script(t, tt.body)}, Timeout: 300 * time.Millisecond}
			start := time.Now()
			d, err := c.Resolve(t.Context(), askForResolver)
			if d.Answer != tt.want || d.Via != ViaResolver {
				t.Errorf("Resolve = %+v, want %v via resolver", d, tt.want)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("err = %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("err = %v, want one containing %q", err, tt.wantErr)
			}
			if took := time.Since(start); took > 3*time.Second {
				t.Errorf("Resolve took %v", took)
			}
		})
	}
}

func TestCommandResolverMissingProgramDenies(t *testing.T) {
	t.Parallel()
	c := &Command{Argv: []string{filepath.Join(t.TempDir(), "missing")}}
	if d, err := c.Resolve(t.Context(), askForResolver); err == nil || d.Answer != state.Deny {
		t.Errorf("Resolve = %+v, %v", d, err)
	}
}

// endpoint is a resolver endpoint that checks the signature and answers.
func endpoint(t *testing.T, secret string, answer func(w http.ResponseWriter)) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ts := r.Header.Get(HeaderTimestamp)
		sec, err := strconv.ParseInt(ts, 10, 64)
		if err != nil || time.Since(time.Unix(sec, 0)) > time.Minute {
			http.Error(w, "stale or missing timestamp", http.StatusUnauthorized)
			return
		}
		if !hmac.Equal([]byte(r.Header.Get(HeaderSignature)), []byte(Sign([]byte(secret), ts, body))) {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var req Request
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" || json.Unmarshal(body, &req) != nil || req.ID != "r1" || r.Header.Get(HeaderAskID) != "r1" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		answer(w)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func says(body string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) { io.WriteString(w, body) }
}

func TestURLResolver(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		secret  string // the resolver's; the endpoint's is "s3cret"
		answer  func(http.ResponseWriter)
		want    state.Answer
		wantErr string
	}{
		{"allow once", "s3cret", says(`{"decision":"allow_once"}`), state.AllowOnce, ""},
		{"allow for the session", "s3cret", says(`{"decision":"allow_session"}`), state.AllowSession, ""},
		{"deny", "s3cret", says(`{"decision":"deny"}`), state.Deny, ""},
		{"garbage denies", "s3cret", says(`<html>ok</html>`), state.Deny, "not {"},
		{"an error status denies even with an allow", "s3cret", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `{"decision":"allow_once"}`)
		}, state.Deny, "500"},
		{"a redirect is not followed", "s3cret", func(w http.ResponseWriter) {
			w.Header().Set("Location", "/elsewhere")
			w.WriteHeader(http.StatusFound)
		}, state.Deny, "302"},
		{"a timeout denies", "s3cret", func(w http.ResponseWriter) {
			time.Sleep(time.Second)
			io.WriteString(w, `{"decision":"allow_once"}`)
		}, state.Deny, "no answer within"},
		{"a wrong secret is refused by the endpoint", "guess", says(`{"decision":"allow_once"}`), state.Deny, "401"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := endpoint(t, "s3cret", tt.answer)
			u := &URL{URL: srv.URL, Secret: []byte(tt.secret), Timeout: 300 * time.Millisecond}
			d, err := u.Resolve(t.Context(), askForResolver)
			if d.Answer != tt.want || d.Via != ViaResolver {
				t.Errorf("Resolve = %+v, want %v via resolver", d, tt.want)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("err = %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("err = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestSignCoversTimestampAndBody(t *testing.T) {
	t.Parallel()
	base := Sign([]byte("k"), "1", []byte("body"))
	if !strings.HasPrefix(base, "sha256=") || len(base) != len("sha256=")+64 {
		t.Fatalf("Sign = %q", base)
	}
	for _, other := range []string{Sign([]byte("k"), "2", []byte("body")), Sign([]byte("k"), "1", []byte("bodY")), Sign([]byte("K"), "1", []byte("body"))} {
		if other == base {
			t.Errorf("a changed input kept the signature %q", base)
		}
	}
}
