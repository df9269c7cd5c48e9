// Package pin records the tool definitions each upstream server showed when
// it was first seen, in a lock file, and reports later definitions that
// differ: the defence against a "rug pull", where a server that was trusted
// swaps a tool's description or schema for one that steers the model. It
// decides nothing; the proxy applies the configured reaction.
package pin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/atomicfile"
)

// lockVersion is the lock file format's version.
const lockVersion = 1

// A Lock is the set of pinned tool definitions, per server, backed by a
// JSON file. Load reads it; Check compares; Update and Save record. A Lock
// is safe for concurrent use.
type Lock struct {
	path string

	mu   sync.Mutex
	file lockFile
}

type lockFile struct {
	Version int                         `json:"version"`
	Servers map[string]map[string]Entry `json:"servers"`
}

// An Entry is one pinned tool definition. The description and title are
// kept in full, so that a change can be shown; the schemas and annotations
// as SHA-256 of their canonical JSON ("" when absent).
type Entry struct {
	Title              string `json:"title,omitempty"`
	Description        string `json:"description"`
	InputSchemaSHA256  string `json:"input_schema_sha256"`
	OutputSchemaSHA256 string `json:"output_schema_sha256,omitempty"`
	AnnotationsSHA256  string `json:"annotations_sha256,omitempty"`
}

// Load reads the lock file at path. A file that does not exist yet is an
// empty Lock, saved to path by Save.
func Load(path string) (*Lock, error) {
	l := &Lock{path: path, file: lockFile{Version: lockVersion, Servers: map[string]map[string]Entry{}}}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading lock file: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l.file); err != nil {
		return nil, fmt.Errorf("lock file %s: %w (delete it to pin the current definitions again)", path, err)
	}
	if l.file.Version != lockVersion {
		return nil, fmt.Errorf("lock file %s: version %d is not %d", path, l.file.Version, lockVersion)
	}
	if l.file.Servers == nil {
		l.file.Servers = map[string]map[string]Entry{}
	}
	return l, nil
}

// Path is the lock file's path.
func (l *Lock) Path() string { return l.path }

// Known reports whether the server's tools have been pinned.
func (l *Lock) Known(server string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.file.Servers[server]
	return ok
}

// A ChangeKind says how a tool differs from its pinned definition.
type ChangeKind uint8

// Change kinds.
const (
	// Modified: the tool's definition differs (see Change.Fields).
	Modified ChangeKind = iota + 1
	// Added: the server lists a tool that was not pinned.
	Added
	// Removed: a pinned tool is no longer listed.
	Removed
)

func (k ChangeKind) String() string {
	switch k {
	case Modified:
		return "modified"
	case Added:
		return "added"
	case Removed:
		return "removed"
	default:
		return "unknown"
	}
}

// MarshalText makes a ChangeKind its String in JSON.
func (k ChangeKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// Fields of a tool definition a Change can name.
const (
	FieldTitle        = "title"
	FieldDescription  = "description"
	FieldInputSchema  = "input_schema"
	FieldOutputSchema = "output_schema"
	FieldAnnotations  = "annotations"
)

// A Change is one tool whose definition differs from the pinned one.
type Change struct {
	Server string
	Tool   string
	Kind   ChangeKind
	// Fields are the fields that differ, for Modified, in a fixed order.
	Fields []string
	// Old and New are the pinned and the current definitions (Old is zero
	// for Added, New for Removed).
	Old, New Entry
}

// String is a human diff: which fields changed and, for the description
// and title, the old and new text.
func (c Change) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "tool %q of server %q ", c.Tool, c.Server)
	switch c.Kind {
	case Added:
		b.WriteString("is new since the definitions were pinned")
		return b.String()
	case Removed:
		b.WriteString("is no longer listed")
		return b.String()
	}
	fmt.Fprintf(&b, "changed its %s since it was pinned", strings.Join(c.Fields, ", "))
	for _, f := range c.Fields {
		switch f {
		case FieldDescription:
			fmt.Fprintf(&b, "\n  description was: %q\n  description now: %q", c.Old.Description, c.New.Description)
		case FieldTitle:
			fmt.Fprintf(&b, "\n  title was: %q\n  title now: %q", c.Old.Title, c.New.Title)
		}
	}
	return b.String()
}

// Check compares the tools a server lists with its pinned definitions and
// returns the differences, sorted by tool name. A server never pinned has
// none: its tools are pinned by Update on first sight.
func (l *Lock) Check(server string, tools []mcp.Tool) []Change {
	current, err := entries(tools)
	l.mu.Lock()
	pinned, known := l.file.Servers[server]
	l.mu.Unlock()
	if !known {
		return nil
	}
	var changes []Change
	if err != nil {
		// A definition that cannot be encoded cannot be compared: report
		// every tool as modified rather than let it pass.
		for _, t := range tools {
			changes = append(changes, Change{Server: server, Tool: t.Name, Kind: Modified, Fields: []string{FieldInputSchema}, Old: pinned[t.Name]})
		}
		return changes
	}
	names := slices.Sorted(maps.Keys(current))
	for _, name := range names {
		now := current[name]
		was, ok := pinned[name]
		if !ok {
			changes = append(changes, Change{Server: server, Tool: name, Kind: Added, New: now})
			continue
		}
		if fields := diff(was, now); len(fields) > 0 {
			changes = append(changes, Change{Server: server, Tool: name, Kind: Modified, Fields: fields, Old: was, New: now})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(pinned)) {
		if _, ok := current[name]; !ok {
			changes = append(changes, Change{Server: server, Tool: name, Kind: Removed, Old: pinned[name]})
		}
	}
	slices.SortStableFunc(changes, func(a, b Change) int { return strings.Compare(a.Tool, b.Tool) })
	return changes
}

func diff(was, now Entry) []string {
	var fields []string
	if was.Title != now.Title {
		fields = append(fields, FieldTitle)
	}
	if was.Description != now.Description {
		fields = append(fields, FieldDescription)
	}
	if was.InputSchemaSHA256 != now.InputSchemaSHA256 {
		fields = append(fields, FieldInputSchema)
	}
	if was.OutputSchemaSHA256 != now.OutputSchemaSHA256 {
		fields = append(fields, FieldOutputSchema)
	}
	if was.AnnotationsSHA256 != now.AnnotationsSHA256 {
		fields = append(fields, FieldAnnotations)
	}
	return fields
}

// Update pins tools as the server's definitions, replacing what was pinned
// for it. It does not write the file: call Save.
func (l *Lock) Update(server string, tools []mcp.Tool) error {
	current, err := entries(tools)
	if err != nil {
		return fmt.Errorf("pinning tools of server %q: %w", server, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.file.Servers[server] = current
	return nil
}

// Save writes the lock file atomically (see atomicfile.Write), readable by
// its owner only.
func (l *Lock) Save() error {
	l.mu.Lock()
	data, err := json.MarshalIndent(l.file, "", "  ")
	l.mu.Unlock()
	if err != nil {
		return fmt.Errorf("encoding lock file: %w", err)
	}
	data = append(data, '\n')
	if err := atomicfile.Write(l.path, data, 0o600); err != nil {
		return fmt.Errorf("writing lock file: %w", err)
	}
	return nil
}

// entries turns tools into their pinned form, keyed by name.
func entries(tools []mcp.Tool) (map[string]Entry, error) {
	out := make(map[string]Entry, len(tools))
	for _, t := range tools {
		e, err := entry(t)
		if err != nil {
			return nil, fmt.Errorf("tool %q: %w", t.Name, err)
		}
		out[t.Name] = e
	}
	return out, nil
}

func entry(t mcp.Tool) (Entry, error) {
	// Go through the tool's own JSON, so that the raw and the structured
	// forms of a schema pin alike.
	data, err := json.Marshal(t)
	if err != nil {
		return Entry{}, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return Entry{}, err
	}
	e := Entry{Title: t.Title, Description: t.Description}
	for key, dst := range map[string]*string{
		"inputSchema":  &e.InputSchemaSHA256,
		"outputSchema": &e.OutputSchemaSHA256,
		"annotations":  &e.AnnotationsSHA256,
	} {
		raw, ok := fields[key]
		if !ok || string(raw) == "null" {
			continue
		}
		sum, err := canonicalHash(raw)
		if err != nil {
			return Entry{}, fmt.Errorf("%s: %w", key, err)
		}
		*dst = sum
	}
	return e, nil
}

// canonicalHash is the SHA-256 of raw re-encoded with sorted object keys
// and numbers as written, so that key order and spacing do not count.
func canonicalHash(raw json.RawMessage) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", err
	}
	canon, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:]), nil
}
