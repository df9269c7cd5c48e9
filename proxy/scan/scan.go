// Package scan finds credentials in what an upstream sends back
// (docs/design.md, "Deciding a request"): a tool result or a resource's contents
// is scanned for credentials with the detector audit redaction uses
// (internal/secrets) before the client can see any of it, and proxy applies the
// policy's `results:` action: redact, deny (ask, until results
// can be put to a human), or log. Every string of the result is scanned
// as the client will decode it — content text, structured content,
// embedded resource text, _meta, member names — so an upstream cannot
// hide a token behind JSON escapes; the string value of a member whose
// name is a credential's (internal/secrets.IsCredentialName) is masked whole.
package scan

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/secrets"
	"github.com/mcpwarden/mcpwarden/rules"
)

// Mask takes the place of a credential redacted from a result.
const Mask = "[redacted]"

// Findings are what a scan found in one result.
type Findings struct {
	kinds []secrets.Kind // the kinds of credential found, sorted, each once
}

// Found reports whether the scan found a credential.
func (r Findings) Found() bool { return len(r.kinds) > 0 }

// add records the kinds of ms.
func (r *Findings) add(ms []secrets.Match) {
	for _, m := range ms {
		if i, ok := slices.BinarySearch(r.kinds, m.Kind); !ok {
			r.kinds = slices.Insert(r.kinds, i, m.Kind)
		}
	}
}

// Detail is what the result's audit event says was found and done: the
// kinds of credential, never the credential.
func (r Findings) Detail(a rules.ResultAction) string {
	done := "redacted"
	switch a {
	case rules.ResultDeny, rules.ResultAsk:
		done = "withheld"
	case rules.ResultLog:
		done = "passed on"
	}
	return fmt.Sprintf("result credentials: %s (%s, results: %s)", strings.Join(r.Names(), ", "), done, a)
}

// Withheld is the error text the client gets for a result withheld.
func (r Findings) Withheld(canonical string, a rules.ResultAction) string {
	return fmt.Sprintf("mcpwarden withheld the result of %s: it held credentials (%s) and the policy says results: %s.",
		canonical, strings.Join(r.Names(), ", "), a)
}

// Names are the kinds of credential found, as the audit and the client read them.
func (r Findings) Names() []string {
	names := make([]string, len(r.kinds))
	for i, k := range r.kinds {
		names[i] = k.String()
	}
	return names
}

// JSON scans every string of raw, a valid JSON value, for credentials,
// and the value of every `blob` member (a resource's binary contents,
// embedded or read) also as the bytes its base64 encodes. With redact it
// returns raw with each string that holds one replaced by the string
// redacted — a blob by the base64 of its bytes redacted — (raw itself when
// none does); otherwise raw as it is.
func JSON(raw []byte, redact bool) ([]byte, Findings) {
	var scan Findings
	var out []byte
	done := 0                  // raw[:done] is in out, when out is in use
	blobValue := false         // the string next is the value of a `blob` member
	secretAt := -1             // where the string value of a secret-named member starts
	var names secrets.NameMemo // member names that are not a credential's, seen last
	for i := 0; i < len(raw); i++ {
		if raw[i] != '"' {
			continue
		}
		j, escaped := stringEnd(raw, i)
		if j < 0 {
			break // not valid JSON; the decoding that follows says so
		}
		lit := raw[i : j+1]
		var text string
		if !escaped {
			// Read in place: the text is not kept past this iteration
			// unless a credential is found, and then only a redacted copy.
			text = unsafe.String(unsafe.SliceData(lit[1:]), len(lit)-2)
		} else if t, ok := unquote(lit); ok {
			text = t
		} else {
			i = j
			continue
		}
		isKey := nextByte(raw, j+1) == ':'
		var replace string
		found := false
		if ms := secrets.Find(text); len(ms) > 0 {
			scan.add(ms)
			replace, found = secrets.Redact(text, Mask), true
		}
		if blobValue && !isKey {
			if blob, ok := scanBlob(text, &scan); ok {
				replace, found = blob, true
			}
		}
		if i == secretAt && !isKey && utf8.RuneCountInString(text) >= secretValueLen && text != Mask {
			scan.add([]secrets.Match{{Kind: secrets.Assignment, End: len(text)}})
			replace, found = Mask, true
		}
		if secretAt = -1; isKey && names.Credential(text) {
			secretAt = valueStart(raw, j+1)
		}
		if found && redact {
			enc, err := json.Marshal(replace)
			if err == nil {
				out = append(append(out, raw[done:i]...), enc...)
				done = j + 1
			}
		}
		blobValue = isKey && text == "blob"
		i = j
	}
	if out == nil {
		return raw, scan
	}
	return append(out, raw[done:]...), scan
}

// secretValueLen is the length in runes from which the string value of a
// secret-named member is redacted whole, as the secret-named assignments
// of text are (internal/secrets): {"password": "hunter22"} in structured
// content is {"password": "[redacted]"}; "max_tokens": 4096 and
// "keyword": "go" stay.
const secretValueLen = 6

// valueStart returns the index in raw of the quote that starts the value
// of the member whose name ends before i (at its ':'), -1 when the value
// is not a string.
func valueStart(raw []byte, i int) int {
	for ; i < len(raw) && raw[i] != ':'; i++ {
	}
	for i++; i < len(raw); i++ {
		switch raw[i] {
		case ' ', '\t', '\n', '\r':
			continue
		case '"':
			return i
		}
		return -1
	}
	return -1
}

// nextByte returns the first byte of raw from i on that is not JSON white
// space, or 0 at the end.
func nextByte(raw []byte, i int) byte {
	for ; i < len(raw); i++ {
		switch raw[i] {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return raw[i]
	}
	return 0
}

// scanBlob scans the bytes blob, base64 text, encodes for credentials,
// adding what it finds to scan, and returns blob with them redacted
// (re-encoded in the standard alphabet), ok false when it holds none or
// is not base64. Binary
// bytes are scanned as they are: a key file served as
// application/octet-stream is text to the detector.
func scanBlob(blob string, scan *Findings) (redacted string, ok bool) {
	// A lenient client may read it in any of the alphabets and paddings;
	// line breaks are skipped by each.
	var data []byte
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if d, err := enc.DecodeString(blob); err == nil {
			data = d
			break
		}
	}
	if data == nil {
		return "", false
	}
	text := unsafe.String(unsafe.SliceData(data), len(data)) // data is not written again
	ms := secrets.Find(text)
	if len(ms) == 0 {
		return "", false
	}
	scan.add(ms)
	return base64.StdEncoding.EncodeToString([]byte(secrets.Redact(text, Mask))), true
}

// scanResource scans res's contents — text, and the bytes of blobs —
// redacting them in place when redact is set.
func scanResource(res *mcp.ReadResourceResult, redact bool) Findings {
	var scan Findings
	for i, content := range res.Contents {
		if b, ok := content.(mcp.BlobResourceContents); ok {
			if blob, found := scanBlob(b.Blob, &scan); found && redact {
				b.Blob = blob
				res.Contents[i] = b
			}
			continue
		}
		c, ok := content.(mcp.TextResourceContents)
		if !ok {
			continue
		}
		ms := secrets.Find(c.Text)
		if len(ms) == 0 {
			continue
		}
		scan.add(ms)
		if redact {
			c.Text = secrets.Redact(c.Text, Mask)
			res.Contents[i] = c
		}
	}
	return scan
}

// ErrText is the text of err, an upstream's failure, as the client gets
// it: an error message can carry a credential as a result can, so it is
// redacted unless the policy says results: log.
func ErrText(err error, a rules.ResultAction) string {
	if a == rules.ResultLog {
		return err.Error()
	}
	return secrets.Redact(err.Error(), Mask)
}

// Prompt scans every string of a prompts/get result (description,
// message text, embedded resources and their blobs, _meta) in its JSON
// form, as JSON does with a result. With redact, a result that holds a credential
// is returned redacted, read back from the redacted JSON as a client
// reads it; res itself is not changed.
func Prompt(res *mcp.GetPromptResult, redact bool) (*mcp.GetPromptResult, Findings, error) {
	raw, err := json.Marshal(res)
	if err != nil {
		return nil, Findings{}, fmt.Errorf("encoding the prompt to scan it: %w", err)
	}
	out, scan := JSON(raw, redact)
	if !redact || !scan.Found() {
		return res, scan, nil
	}
	msg := json.RawMessage(out)
	red, err := mcp.ParseGetPromptResult(&msg)
	if err != nil {
		return nil, scan, fmt.Errorf("reading the redacted prompt: %w", err)
	}
	return red, scan, nil
}

// Reply scans the result of a request other than tools/call that can
// carry what an upstream read — resources/read, prompts/get,
// completion/complete — and returns
// it, redacted when redact is set and it holds a credential. Any other
// result is returned as it is. An error means the result could not be
// scanned or redacted: the caller withholds it.
func Reply(res any, redact bool) (any, Findings, error) {
	switch r := res.(type) {
	case *mcp.ReadResourceResult:
		return r, scanResource(r, redact), nil
	case *mcp.GetPromptResult:
		return Prompt(r, redact)
	case *mcp.CompleteResult:
		out, scan := scanCompletion(r, redact)
		return out, scan, nil
	}
	return res, Findings{}, nil
}

// scanCompletion scans the values of a completion/complete result, which
// a client may show the model or fill in for it, and returns the result
// with each credential redacted when redact is set (res itself is not
// changed).
func scanCompletion(res *mcp.CompleteResult, redact bool) (*mcp.CompleteResult, Findings) {
	var scan Findings
	out := *res
	out.Completion.Values = make([]string, 0, len(res.Completion.Values))
	for _, v := range res.Completion.Values {
		if ms := secrets.Find(v); len(ms) > 0 {
			scan.add(ms)
			if redact {
				v = secrets.Redact(v, Mask)
			}
		}
		out.Completion.Values = append(out.Completion.Values, v)
	}
	if !scan.Found() {
		return res, scan
	}
	return &out, scan
}
