package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

func (r *reference) schema() []byte {
	b, err := json.MarshalIndent(r.root, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}

func (r *reference) markdown() []byte {
	var b bytes.Buffer
	b.WriteString(`<!-- Generated from internal/config's types by go generate ./internal/config; do not edit. -->

# Configuration reference

Every key of mcpwarden's config file (YAML, JSON or TOML), with its type, its
default and what it does, generated from the config types' doc comments; a
test fails when this page or the [JSON Schema](mcpwarden.schema.json) drifts
from them. Any key can also be set by an environment variable: ` + "`MCPWARDEN_`" + ` and the
key in capitals with ` + "`__`" + ` between its parts (` + "`MCPWARDEN_LOG__LEVEL=debug`" + `). Durations look like
` + "`30s`, `5m`, `1h`" + `; sizes like ` + "`512MiB`" + `. "—" in the default column means the zero
value (empty, false, 0, none) or a default the description explains.

## Editor support

[docs/mcpwarden.schema.json](mcpwarden.schema.json) is a JSON Schema (draft
2020-12) of the file. With the YAML language server (VS Code's YAML extension,
Neovim, Helix, JetBrains), put this line at the top of ` + "`mcpwarden.yaml`" + `:

` + "```yaml\n# yaml-language-server: $schema=" + schemaID + "\n```" + `

or, from a clone, a relative path to ` + "`docs/mcpwarden.schema.json`" + `. For a JSON config, set
` + "`\"$schema\"`" + ` in your editor's JSON schema settings (the file itself may not hold a
` + "`$schema`" + ` key: mcpwarden refuses unknown keys). Every mcpwarden config in ` + "`examples/`" + ` is checked
against the schema by the tests. The schema checks shapes, types and the fixed
values of a key; rule grammar, paths, hosts and the rest are checked by
` + "`mcpwarden validate`" + `.

`)
	for _, bl := range r.blocks {
		title := "`" + bl.key + "`"
		if bl.key == "" {
			title = "Top level"
		}
		fmt.Fprintf(&b, "## %s\n\n", title)
		if bl.doc != "" {
			fmt.Fprintf(&b, "%s\n\n", escapeHTML(bl.doc))
		}
		b.WriteString("| key | type | default | description |\n| --- | --- | --- | --- |\n")
		for _, rw := range bl.rows {
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", rw.key, cell(rw.typ), cell(rw.def), cell(rw.doc))
		}
		b.WriteString("\n")
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// cell makes s safe in a table cell.
func cell(s string) string {
	return strings.ReplaceAll(escapeHTML(s), "|", `\|`)
}

// escapeHTML keeps a <placeholder> outside code from reading as an HTML
// tag.
func escapeHTML(s string) string {
	parts := strings.Split(s, "`")
	for i := 0; i < len(parts); i += 2 {
		parts[i] = strings.NewReplacer("<", "&lt;", ">", "&gt;").Replace(parts[i])
	}
	return strings.Join(parts, "`")
}

// anchor is the #anchor of the section of key, whose heading is the key
// in code: GitHub's, without the punctuation.
func anchor(key string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(key) {
		if r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}
