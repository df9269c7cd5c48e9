package approvals

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/state"
)

// DefaultResolverTimeout bounds one external resolver's answer when none
// is configured. The ask's own deadline (ask.timeout) bounds it too.
const DefaultResolverTimeout = 30 * time.Second

// maxAnswer bounds what an external resolver may answer.
const maxAnswer = 64 << 10

// The headers of a URL resolver's request.
const (
	HeaderSignature = "X-Mcpwarden-Signature" // "sha256=" + hex HMAC-SHA256 of timestamp + "." + body
	HeaderTimestamp = "X-Mcpwarden-Timestamp" // Unix seconds, signed with the body
	HeaderAskID     = "X-Mcpwarden-Ask"
)

// A Command resolves asks with an external program: it gets the Request as
// JSON on stdin and answers {"decision": "allow_once" | "allow_session" |
// "deny"} on stdout. A non-zero exit, other output or no answer within
// Timeout denies the call. A Command is safe for concurrent use; each ask
// runs the program anew.
type Command struct {
	// Argv is the program and its arguments. Required.
	Argv []string
	// Timeout bounds one run; 0 means DefaultResolverTimeout. The program
	// (and its process group, where there is one) is killed after it.
	Timeout time.Duration
	// Env is the program's environment; nil inherits mcpwarden's.
	Env []string
}

// encodeAsk encodes req for a resolver and bounds ctx by timeout; what
// names the resolver in the error. The caller must call cancel.
func encodeAsk(ctx context.Context, req Request, timeout time.Duration, what string) ([]byte, context.Context, context.CancelFunc, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, ctx, func() {}, fmt.Errorf("%s: encoding the ask: %w", what, err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	return body, ctx, cancel, nil
}

// Resolve runs the program for req.
func (c *Command) Resolve(ctx context.Context, req Request) (Decision, error) {
	d := Decision{Answer: state.Deny, Via: ViaResolver, Who: "resolver " + strings.Join(c.Argv, " ")}
	if len(c.Argv) == 0 || c.Argv[0] == "" {
		return d, errors.New("resolver command: no program")
	}
	d.Who = cut(d.Who, maxWho)
	timeout := cmp.Or(c.Timeout, DefaultResolverTimeout)
	body, ctx, cancel, err := encodeAsk(ctx, req, timeout, "resolver command")
	if err != nil {
		return d, err
	}
	defer cancel()
	cmd := exec.CommandContext(ctx, c.Argv[0], c.Argv[1:]...)
	cmd.Env = c.Env
	cmd.Stdin = bytes.NewReader(body)
	stdout := &capped{max: maxAnswer}
	stderr := &capped{max: 1024}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = time.Second
	killGroup(cmd)
	err = cmd.Run()
	switch {
	case ctx.Err() != nil:
		return d, fmt.Errorf("resolver command %q gave no answer within %s", c.Argv[0], timeout)
	case err != nil:
		return d, fmt.Errorf("resolver command %q: %w%s", c.Argv[0], err, stderr.note())
	case stdout.over:
		return d, fmt.Errorf("resolver command %q: answer longer than %d bytes", c.Argv[0], maxAnswer)
	}
	a, err := parseAnswer(stdout.buf.Bytes())
	if err != nil {
		return d, fmt.Errorf("resolver command %q: %w", c.Argv[0], err)
	}
	d.Answer = a
	return d, nil
}

// A URL resolves asks with an HTTP endpoint: it POSTs the Request as JSON,
// signed with HMAC-SHA256 over the timestamp and the body (see Sign), and
// reads {"decision": ...} from a 200 response. Any other status, body or
// no answer within Timeout denies the call. Redirects are not followed.
// The answer itself is not signed: use https, so that it cannot be forged
// on the way. A URL is safe for concurrent use.
type URL struct {
	// URL is the endpoint. Required.
	URL string
	// Secret is the HMAC key. Required.
	Secret []byte
	// Timeout bounds one request; 0 means DefaultResolverTimeout.
	Timeout time.Duration
	// Client sends the request; nil uses a client that follows no redirects.
	Client *http.Client
}

var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// Sign returns the HeaderSignature value for a request with this timestamp
// (HeaderTimestamp) and body: "sha256=" and the hex HMAC-SHA256, keyed
// with secret, of timestamp + "." + body. A receiver recomputes it, compares
// with hmac.Equal and rejects old timestamps.
func Sign(secret []byte, timestamp string, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(timestamp))
	mac.Write([]byte("."))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// Resolve posts req to the endpoint.
func (u *URL) Resolve(ctx context.Context, req Request) (Decision, error) {
	d := Decision{Answer: state.Deny, Via: ViaResolver, Who: cut("resolver "+u.URL, maxWho)}
	if len(u.Secret) == 0 {
		return d, errors.New("resolver url: no secret to sign with")
	}
	timeout := cmp.Or(u.Timeout, DefaultResolverTimeout)
	body, ctx, cancel, err := encodeAsk(ctx, req, timeout, "resolver url")
	if err != nil {
		return d, err
	}
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, u.URL, bytes.NewReader(body))
	if err != nil {
		return d, fmt.Errorf("resolver url: %w", err)
	}
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set(HeaderTimestamp, ts)
	hreq.Header.Set(HeaderSignature, Sign(u.Secret, ts, body))
	hreq.Header.Set(HeaderAskID, req.ID)
	client := u.Client
	if client == nil {
		client = noRedirects
	}
	resp, err := client.Do(hreq)
	if err != nil {
		if ctx.Err() != nil {
			return d, fmt.Errorf("resolver url gave no answer within %s", timeout)
		}
		return d, fmt.Errorf("resolver url: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	switch {
	case err != nil && ctx.Err() != nil:
		return d, fmt.Errorf("resolver url gave no answer within %s", timeout)
	case err != nil:
		return d, fmt.Errorf("resolver url: reading the answer: %w", err)
	case resp.StatusCode != http.StatusOK:
		return d, fmt.Errorf("resolver url answered %s", resp.Status)
	case len(data) > maxAnswer:
		return d, fmt.Errorf("resolver url: answer longer than %d bytes", maxAnswer)
	}
	a, err := parseAnswer(data)
	if err != nil {
		return d, fmt.Errorf("resolver url: %w", err)
	}
	d.Answer = a
	return d, nil
}

// capped keeps the first max bytes written to it and notes any overflow.
type capped struct {
	max  int
	buf  bytes.Buffer
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); len(p) > room {
		c.buf.Write(p[:max(room, 0)])
		c.over = true
		return len(p), nil
	}
	return c.buf.Write(p)
}

func (c *capped) note() string {
	s := strings.TrimSpace(c.buf.String())
	if s == "" {
		return ""
	}
	return fmt.Sprintf(" (stderr: %q)", cut(s, 200))
}
