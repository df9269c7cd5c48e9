package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/proxy/naming"
	"github.com/mcpwarden/mcpwarden/proxy/scan"
	"github.com/mcpwarden/mcpwarden/rules"
)

// An upstream's log and progress notifications reach the model as a
// result does, so they are scanned with the result scanner and the
// policy's `results:` action for the server. A notification answers no
// request, so there is nothing to refuse and no one waiting to be asked:
// for it, deny and ask withhold the credential itself (it is redacted, as
// under redact), and the notification still goes on, so that a progress
// bar or a log stream does not stop. log passes it on as it is. Either way
// the finding is logged and audited, never the credential.

// scanNotification scans every string of params, the parameters of a
// notification from server (message, data, logger, _meta), and returns
// them with each credential redacted unless the policy says results: log.
// A finding is logged and audited as a result event of the notification's
// method.
func (s *relay) scanNotification(ctx context.Context, server string, method mcp.MCPMethod, params map[string]any) (scanned map[string]any) {
	// The progress token is mcpwarden's own, mapped back to the client's
	// after this: not scanned (its name is a secret key's).
	token, hasToken := params["progressToken"]
	delete(params, "progressToken")
	defer func() {
		if hasToken && scanned != nil {
			scanned["progressToken"] = token
		}
	}()
	raw, err := json.Marshal(params)
	if err != nil {
		// What cannot be scanned does not go on: doubt fails closed.
		s.logger.Warn("dropping an upstream notification that could not be scanned", "server", server, "method", method, "err", err)
		return nil
	}
	action := s.current().policy.Results(server)
	redact := action != rules.ResultLog
	out, findings := scan.JSON(raw, redact)
	if !findings.Found() {
		return params
	}
	done := "redacted"
	if !redact {
		done = "passed on"
	}
	detail := fmt.Sprintf("notification credentials: %s (%s, results: %s)", strings.Join(findings.Names(), ", "), done, action)
	canonical := naming.Canonical(server, string(method))
	s.logger.Warn("upstream notification held credentials", "request", canonical, "detail", detail)
	s.writeAudit(context.WithoutCancel(ctx), audit.Event{Event: audit.KindResult, Server: server, Tool: canonical, Method: string(method), Detail: detail, PolicySHA256: s.current().policy.SHA256()})
	if !redact {
		return params
	}
	var red map[string]any
	if err := json.Unmarshal(out, &red); err != nil {
		s.logger.Warn("dropping an upstream notification that could not be redacted", "server", server, "method", method, "err", err)
		return nil
	}
	return red
}
