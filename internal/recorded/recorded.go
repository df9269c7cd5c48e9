// Package recorded reads back, out of mcpwarden's audit logs, the requests
// that were decided: each decision event as the rules.Call the proxy
// decided and what it decided (decision, rule, who settled an ask, how it
// ended, whether it was in shadow mode). It reads lines with the audit
// package's own reader (audit.ReadEvents) and does no deciding; policy
// suggest, policy diff and the reload warning replay what it returns.
package recorded

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/jsonargs"
	"github.com/mcpwarden/mcpwarden/internal/textcut"
	"github.com/mcpwarden/mcpwarden/proxy/connect"
	"github.com/mcpwarden/mcpwarden/rules"
)

// A Request is one decided request read from a decision event. Call holds
// the request as the rules see it (server, tool or request kind,
// arguments, profile, principal); the labels of flow rules armed in its
// session are not in the log (they depend on the policy: see
// policydiff.Decisions), so Call.Armed is nil. The other fields are what
// the event says was decided.
type Request struct {
	Call    rules.Call
	ID      string
	Session string
	// ArmedBy is, of a request a flow rule decided, the id of the request
	// whose result armed the rule's label.
	ArmedBy   string
	Decision  string // audit.DecisionAllow, DecisionAsk or DecisionDeny
	Rule      string // the deciding rule's text, or a built-in name ("default", "outside_workspace", …)
	GrantedBy audit.GrantedBy
	Outcome   audit.Outcome
	// Shadow is the event's "shadow": the request was decided in shadow
	// mode (enforce: shadow) and forwarded whatever the decision.
	Shadow bool
	// Error is the event's error: a request refused before any rule
	// (malformed or mistyped arguments) or a resolver's failure.
	Error string
	// Redacted are the argument keys (dotted, "[]" for arrays) whose
	// recorded value was redacted (audit.Redacted) or cut: the request is
	// not known as it was sent, only its shape.
	Redacted []string
	// Where is the file (as named to Read) and line it was read from
	// ("audit.jsonl:12").
	Where string
}

// Canonical is the request's canonical name, mcp:<server>:<tool>.
func (r *Request) Canonical() string { return rules.Canonical(r.Call.Server, r.Call.Tool) }

// String is r as one line: its canonical name, its arguments as compact
// JSON (cut), and its profile.
func (r *Request) String() string {
	t := r.Canonical()
	if len(r.Call.Arguments) > 0 {
		var b strings.Builder
		e := json.NewEncoder(&b)
		e.SetEscapeHTML(false)
		_ = e.Encode(r.Call.Arguments) // decoded from JSON: it encodes
		args, hidden := textcut.Head(strings.TrimSuffix(b.String(), "\n"), 160)
		if hidden > 0 {
			args += "…"
		}
		t += " " + args
	}
	if r.Call.Profile != "" {
		t += " (profile " + r.Call.Profile + ")"
	}
	return t
}

// Forwarded reports whether the request reached its server: allowed,
// asked and allowed, or decided in shadow mode.
func (r *Request) Forwarded() bool {
	return r.Shadow || r.Outcome == audit.OutcomeAllowed || r.Decision == audit.DecisionAllow
}

// RefusedByPerson reports whether the request was asked and a person (or
// the approver they configured: the approvals page, the CLI, the
// resolver) refused it. A timeout, or a client that cannot be asked, is
// nobody's refusal.
func (r *Request) RefusedByPerson() bool {
	if r.Outcome != audit.OutcomeRefused {
		return false
	}
	switch r.GrantedBy {
	case audit.GrantedByUserDenied, audit.GrantedByApprovalPage, audit.GrantedByApprovalCLI, audit.GrantedByResolver:
		return true
	}
	return false
}

// Files returns the files to read for the logs at paths, in order: for
// each, its rotated files oldest first and then itself (audit.Files), each
// file once. A path that does not exist is an error.
func Files(paths []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("audit log %s: %w", p, err)
		}
		files, err := audit.Files(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			abs, err := filepath.Abs(f)
			if err != nil {
				return nil, err
			}
			if !seen[abs] {
				seen[abs] = true
				out = append(out, f)
			}
		}
	}
	return out, nil
}

// Read reads the requests of the logs at paths (see Files) in order and
// calls fn with each; it stops at fn's first error. A line that is not a
// JSON event is an error naming its file and line (audit repair moves a
// torn tail aside); a last line without its newline is still being written
// and is skipped.
func Read(paths []string, fn func(Request) error) error {
	files, err := Files(paths)
	if err != nil {
		return err
	}
	for _, name := range files {
		if err := readFile(name, 0, fn); err != nil {
			return err
		}
	}
	return nil
}

// Tail returns the last n requests of the log file at path (the file
// alone, not its rotated ones) read from at most its last maxBytes: what a
// running proxy decided recently, at a bounded cost. A missing file has
// none; a line that is not an event ends the reading with an error, and
// the requests before it.
func Tail(path string, maxBytes int64, n int) ([]Request, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("audit log %s: %w", path, err)
	}
	var out []Request
	err = readFile(path, max(0, fi.Size()-maxBytes), func(r Request) error {
		out = append(out, r)
		if len(out) > 2*n {
			out = slices.Delete(out, 0, len(out)-n)
		}
		return nil
	})
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return slices.Clip(out), err
}

// readFile reads the requests of one file from byte from; from > 0 starts
// mid-line, and that line's remainder is skipped.
func readFile(name string, from int64, fn func(Request) error) error {
	f, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	defer f.Close()
	skipFirst := false
	if from > 0 {
		if _, err := f.Seek(from-1, io.SeekStart); err != nil {
			return fmt.Errorf("audit log %s: %w", name, err)
		}
		skipFirst = true // the byte before from: a newline leaves an empty first line
	}
	return ReadFrom(f, name, skipFirst, fn)
}

// ReadFrom reads the requests of the log lines of r, named name in
// errors, and calls fn with each decision event's; with skipFirst the
// first line (a partial one) is not read. See Read.
func ReadFrom(r io.Reader, name string, skipFirst bool, fn func(Request) error) error {
	_, err := audit.ReadEvents(r, func(n int, line []byte, e audit.Event, derr error) error {
		if n == 1 && skipFirst {
			return nil
		}
		if errors.Is(derr, audit.ErrIncompleteLine) {
			return nil
		}
		if derr != nil {
			return fmt.Errorf("%w (not an audit event; audit verify says more, audit repair moves a torn tail aside)", derr)
		}
		req, ok := fromEvent(e, line)
		if !ok {
			return nil
		}
		req.Where = fmt.Sprintf("%s:%d", name, n)
		return fn(req)
	})
	if err != nil {
		return fmt.Errorf("reading %s: %w", name, err)
	}
	return nil
}

// extra are the fields of a line read by their JSON names rather than
// through audit.Event: shadow (which Event may not have), and the
// arguments again, decoded as the proxy decodes them (numbers as written).
type extra struct {
	Shadow    bool            `json:"shadow"`
	Arguments json.RawMessage `json:"arguments"`
}

// fromEvent is the request of a decision event e read from line; ok is
// false for any other event, and for one that names no request.
func fromEvent(e audit.Event, line []byte) (Request, bool) {
	if e.Event != audit.KindDecision || e.Server == "" {
		return Request{}, false
	}
	tool, ok := strings.CutPrefix(e.Tool, "mcp:"+e.Server+":")
	if !ok || tool == "" {
		return Request{}, false
	}
	var x extra
	_ = json.Unmarshal(line, &x) // the line decoded into e already
	args := e.Arguments
	if len(x.Arguments) > 0 {
		if a, _, err := jsonargs.Parse(x.Arguments); err == nil {
			args = a
		}
	}
	if args == nil {
		args = map[string]any{}
	}
	if tool == rules.ToolConnect {
		if a, err := connect.Args(args); err == nil {
			args = a
		}
	}
	return Request{
		Call: rules.Call{
			Server: e.Server, Tool: tool, Arguments: args,
			Profile: e.Profile, Principal: e.Principal,
		},
		ID:        e.ID,
		Session:   e.Session,
		ArmedBy:   e.ArmedBy,
		Decision:  e.Decision,
		Rule:      e.Rule,
		GrantedBy: e.GrantedBy,
		Outcome:   e.Outcome,
		Shadow:    x.Shadow || e.GrantedBy == audit.GrantedByShadow,
		Error:     e.Error,
		Redacted:  RedactedKeys(args),
	}, true
}

// RedactedKeys returns the keys of args, dotted ("options.path",
// "paths[]"), whose values hold the redaction marker (audit.Redacted, or a
// cut string's "<redacted: N chars>"), sorted.
func RedactedKeys(args map[string]any) []string {
	var out []string
	var walk func(key string, v any)
	walk = func(key string, v any) {
		switch t := v.(type) {
		case string:
			if IsRedacted(t) {
				out = append(out, key)
			}
		case map[string]any:
			for k, e := range t {
				walk(strings.TrimPrefix(key+"."+k, "."), e)
			}
		case []any:
			for _, e := range t {
				walk(key+"[]", e)
			}
		}
	}
	walk("", args)
	sort.Strings(out)
	return slices.Compact(out)
}

// IsRedacted reports whether s holds what the audit log's Redactor writes
// in place of a secret or of a cut string's tail.
func IsRedacted(s string) bool {
	return strings.Contains(s, audit.Redacted) || strings.Contains(s, "<redacted: ")
}
