package audit

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// An HTTPSink POSTs each line, as an application/json body, to a URL, and
// counts a line as stored when the server answers 2xx. Write waits for the
// answer (or for ctx, or for the client's timeout; a nil client gets one with
// a 10 s timeout), so pass a ctx that is not cancelled with the client's
// request if the result event must still be sent. Retries are the receiver's
// business: a failed Write is reported, as for any sink. The receiver sees the
// lines in chain order and can verify prev_sha256 itself.
type HTTPSink struct {
	url    string
	client *http.Client

	closed atomic.Bool
}

// NewHTTPSink returns an HTTPSink posting to url with client.
func NewHTTPSink(url string, client *http.Client) *HTTPSink {
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	return &HTTPSink{url: url, client: client}
}

// Write posts line and waits for a 2xx answer.
func (s *HTTPSink) Write(ctx context.Context, line []byte) error {
	if s.closed.Load() {
		return ErrClosed
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(line))
	if err != nil {
		return fmt.Errorf("posting audit line: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return fmt.Errorf("posting audit line: %w", err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("posting audit line: %s answered %s", s.url, resp.Status)
	}
	return nil
}

// Close marks the sink closed. It is idempotent.
func (s *HTTPSink) Close() error {
	s.closed.Store(true)
	return nil
}
