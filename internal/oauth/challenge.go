package oauth

import (
	"errors"
	"net/http"
	"strings"
)

// An ErrorCode is an RFC 6750 §3.1 error code, sent in WWW-Authenticate.
type ErrorCode string

// The error codes a resource server sends. CodeNone is a request that
// carried no token at all, which RFC 6750 §3.1 says gets no error code.
const (
	CodeNone              ErrorCode = ""
	CodeInvalidRequest    ErrorCode = "invalid_request"
	CodeInvalidToken      ErrorCode = "invalid_token"
	CodeInsufficientScope ErrorCode = "insufficient_scope"
)

// Status is the HTTP status a refusal with the code gets (RFC 6750 §3.1).
func (c ErrorCode) Status() int {
	switch c {
	case CodeInvalidRequest:
		return http.StatusBadRequest
	case CodeInsufficientScope:
		return http.StatusForbidden
	default:
		return http.StatusUnauthorized
	}
}

// An Error is why a request's token was refused. Description is safe to
// send to the client: it never holds the token. Err, when set, is the
// underlying cause, for mcpwarden's own log.
type Error struct {
	Code        ErrorCode
	Description string
	Err         error
}

func (e *Error) Error() string {
	msg := e.Description
	if e.Code != CodeNone {
		msg = string(e.Code) + ": " + msg
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// ErrNoToken is the refusal of a request that carried no bearer token
// (or credentials of another scheme).
var ErrNoToken = &Error{Code: CodeNone, Description: "this resource needs an OAuth access token: get one from the authorization server named in the resource metadata and send it as Authorization: Bearer <token>"}

func invalidToken(desc string, err error) *Error {
	return &Error{Code: CodeInvalidToken, Description: desc, Err: err}
}

// A Challenge is the answer to a refused request: its status and the
// WWW-Authenticate value, which points the client at the resource metadata
// (RFC 9728 §5.1) and, when a scope is missing, names the scopes needed.
type Challenge struct {
	Status int
	Header string
	// Body is a sentence saying what to do next.
	Body string
}

// NewChallenge builds the answer to a request refused with err: an *Error
// from Verify or BearerToken (anything else is answered as an invalid
// token). metadataURL is the resource metadata's URL; scopes, when not
// empty, are sent as the scope hint.
func NewChallenge(err error, metadataURL string, scopes []string) Challenge {
	var e *Error
	if !errors.As(err, &e) {
		e = invalidToken("the token could not be verified", err)
	}
	params := []string{"resource_metadata=" + quote(metadataURL)}
	if e.Code != CodeNone {
		params = append(params, "error="+quote(string(e.Code)), "error_description="+quote(e.Description))
	}
	if len(scopes) > 0 {
		params = append(params, "scope="+quote(strings.Join(scopes, " ")))
	}
	return Challenge{
		Status: e.Code.Status(),
		Header: "Bearer " + strings.Join(params, ", "),
		Body:   e.Description,
	}
}

// Write sends the challenge.
func (c Challenge) Write(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", c.Header)
	http.Error(w, c.Body, c.Status)
}

// quote makes s an RFC 9110 quoted-string, dropping what a header value
// cannot hold (control characters, non-ASCII).
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := range len(s) {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == ' ' || (c >= 0x21 && c <= 0x7e):
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// maxTokenBytes bounds the bearer token a request may carry.
const maxTokenBytes = 16 << 10

// BearerToken reads the request's access token from its one Authorization
// header (RFC 6750 §2.1; the scheme is case-insensitive). No header is
// ErrNoToken, as is another scheme; two headers are invalid_request; a
// value that is not a b64token is invalid_token. Tokens in the query or the body are not
// read.
func BearerToken(r *http.Request) (string, error) {
	values := r.Header.Values("Authorization")
	switch len(values) {
	case 0:
		return "", ErrNoToken
	case 1:
	default:
		return "", &Error{Code: CodeInvalidRequest, Description: "send one Authorization header, not several"}
	}
	scheme, tok, _ := strings.Cut(values[0], " ")
	if !strings.EqualFold(scheme, "Bearer") {
		// RFC 6750 §3.1: another method is answered as no token.
		return "", ErrNoToken
	}
	if !b64token(tok) {
		return "", invalidToken("the bearer token is not a b64token (RFC 6750 §2.1)", nil)
	}
	return tok, nil
}

// b64token reports whether s is an RFC 6750 b64token of sane length:
// 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=".
func b64token(s string) bool {
	if s == "" || len(s) > maxTokenBytes {
		return false
	}
	pad := false
	for i := range len(s) {
		c := s[i]
		switch {
		case c == '=':
			pad = i > 0
			if !pad {
				return false
			}
		case pad:
			return false
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9',
			c == '-', c == '.', c == '_', c == '~', c == '+', c == '/':
		default:
			return false
		}
	}
	return true
}
