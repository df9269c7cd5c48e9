package scan

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
	"unicode/utf8"
	"unsafe"

	"github.com/mcpwarden/mcpwarden/internal/secrets"
)

// refScanJSON is JSON (the function) as it was before its strings were read by
// stringEnd and unquote (issue 21): a byte at a time, escaped strings
// through json.Unmarshal. It stays as the reference of
// FuzzScanJSONMatchesTheReference.
func refScanJSON(raw []byte, redact bool) ([]byte, Findings) {
	var scan Findings
	var out []byte
	done := 0
	blobValue := false
	secretAt := -1
	for i := 0; i < len(raw); i++ {
		if raw[i] != '"' {
			continue
		}
		j, escaped := i+1, false
		for j < len(raw) && raw[j] != '"' {
			if raw[j] == '\\' {
				escaped = true
				j++
			}
			j++
		}
		if j >= len(raw) {
			break
		}
		lit := raw[i : j+1]
		var text string
		if !escaped {
			text = unsafe.String(unsafe.SliceData(lit[1:]), len(lit)-2)
		} else if json.Unmarshal(lit, &text) != nil {
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
		if secretAt = -1; isKey && secrets.IsCredentialName(text) {
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

// FuzzScanJSONMatchesTheReference holds JSON (the function) to refScanJSON on any
// bytes, JSON or not.
func FuzzScanJSONMatchesTheReference(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"key AKIAIOSFODNN7EXAMPLE\n\"x\""}]}`,
		`["\u0067hp_abcdefghijklmnopqrstuvwxyz0123456789", "\ud83d\ude00 \ud800 \u00e9", "a\\", "\'", "\x01"]`,
		`{"blob":"QUtJQUlPU0ZPRE5ON0VYQU1QTEUK","b\"lob":"x"}`, `"unterminated \"`, "\"\xff\\n\"",
		`{"password" : "hunter22", "token": {"a":"bcdefgh"}, "pat": ["abcdefg"], "key":"[redacted]"}`, `{"secret":"`,
	} {
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, raw []byte, redact bool) {
		got, gotScan := JSON(raw, redact)
		want, wantScan := refScanJSON(raw, redact)
		if !bytes.Equal(got, want) || !slices.Equal(gotScan.kinds, wantScan.kinds) {
			t.Fatalf("JSON(%q) = %q %v, want %q %v", raw, got, gotScan.kinds, want, wantScan.kinds)
		}
	})
}

// FuzzUnquoteMatchesEncodingJSON holds unquote to json.Unmarshal.
func FuzzUnquoteMatchesEncodingJSON(f *testing.F) {
	for _, s := range []string{`a\nb`, `\ud83d\ude00`, `\ud800x`, `\u00E9\/\b\f\r\t`, "\xff\\n", "\x1f\\n", `\'`, `\u12`, "日本\\\"語"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		lit := append(append([]byte{'"'}, body...), '"')
		if end, escaped := stringEnd(lit, 0); end != len(lit)-1 || !escaped {
			return
		}
		var want string
		err := json.Unmarshal(lit, &want)
		got, ok := unquote(lit)
		if ok != (err == nil) || ok && got != want {
			t.Fatalf("unquote(%q) = %q, %v; json.Unmarshal gives %q, %v", lit, got, ok, want, err)
		}
	})
}
