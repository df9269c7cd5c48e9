package approvals

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/atomicfile"
	"github.com/mcpwarden/mcpwarden/internal/state"
)

// A TokenFile is what a running mcpwarden writes for the CLI: where its
// approvals page is and the token it takes. The file is created with mode
// 0600 and removed at shutdown.
type TokenFile struct {
	URL   string `json:"url"` // the page, without the token: http://127.0.0.1:8766/
	Token string `json:"token"`
	PID   int    `json:"pid,omitempty"`
}

// PageURL is the page's address with its token, to open in a browser.
func (t TokenFile) PageURL() string { return t.URL + "?token=" + t.Token }

// WriteTokenFile writes t to path with mode 0600, replacing the file
// atomically, so a reader sees the old or the new one, whole.
func WriteTokenFile(path string, t TokenFile) error {
	data, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("writing token file: %w", err)
	}
	return nil
}

// RemoveTokenFile removes the token file at path if it still holds token,
// so that an instance never removes a newer instance's file.
func RemoveTokenFile(path, token string) error {
	t, err := ReadTokenFile(path)
	if err != nil || t.Token != token {
		return nil
	}
	return os.Remove(path)
}

// ReadTokenFile reads the token file at path. A file that others than its
// owner may read is refused, as ssh refuses such a key.
func ReadTokenFile(path string) (TokenFile, error) {
	var t TokenFile
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return t, fmt.Errorf("no token file at %s: is mcpwarden serve running with ask.approvals: local? (%w)", path, err)
	}
	if err != nil {
		return t, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return t, err
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return t, fmt.Errorf("token file %s has mode %#o: it must be readable by its owner only (chmod 600)", path, perm)
	}
	data, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return t, err
	}
	if err := json.Unmarshal(data, &t); err != nil || t.URL == "" || t.Token == "" {
		return TokenFile{}, fmt.Errorf("token file %s is not an mcpwarden approvals token file", path)
	}
	return t, nil
}

// A Client talks to a running mcpwarden's approvals API, as the CLI does.
type Client struct {
	TokenFile
	// HTTP sends the requests; nil uses a client with a 10 s timeout.
	HTTP *http.Client
}

var defaultHTTP = &http.Client{Timeout: 10 * time.Second}

// Snapshot returns the pending asks and the recent decisions.
func (c *Client) Snapshot(ctx context.Context) (Snapshot, error) {
	var s Snapshot
	err := c.do(ctx, http.MethodGet, strings.TrimSuffix(c.URL, "/")+pathState, nil, &s)
	return s, err
}

// Decide answers the pending ask id; who names the human for the history
// and the audit log.
func (c *Client) Decide(ctx context.Context, id string, a state.Answer, who string) error {
	body, err := json.Marshal(decideBody{Decision: a.String(), Via: "cli", Who: who})
	if err != nil {
		return err
	}
	return c.do(ctx, http.MethodPost, strings.TrimSuffix(c.URL, "/")+pathDecide+id, body, nil)
}

func (c *Client) do(ctx context.Context, method, url string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := c.HTTP
	if hc == nil {
		hc = defaultHTTP
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("reaching mcpwarden's approvals API at %s: %w", c.URL, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error string }
		if json.Unmarshal(data, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(data))
		}
		if resp.StatusCode == http.StatusNotFound {
			return fmt.Errorf("%w: %s", ErrUnknownAsk, strings.TrimPrefix(e.Error, ErrUnknownAsk.Error()+": "))
		}
		if resp.StatusCode == http.StatusGatewayTimeout && strings.HasPrefix(e.Error, ErrAnswerNotTaken.Error()) {
			return fmt.Errorf("%w: %s", ErrAnswerNotTaken, strings.TrimPrefix(e.Error, ErrAnswerNotTaken.Error()+": "))
		}
		return fmt.Errorf("approvals API: %s: %s", resp.Status, e.Error)
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}
