package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	yamlv3 "go.yaml.in/yaml/v3"
)

// compileSchema compiles docs/mcpwarden.schema.json as draft 2020-12.
func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(filepath.Join(moduleRoot(t), schemaFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(schemaID, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(schemaID)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// asJSON turns a decoded YAML value into what the validator takes.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// exampleConfigs are the mcpwarden configs in examples/, by name: every
// mcpwarden.yaml and YAML file outside the client folders, and the config
// a Kubernetes ConfigMap holds.
func exampleConfigs(t *testing.T) map[string]any {
	t.Helper()
	root := moduleRoot(t)
	configs := map[string]any{}
	err := filepath.WalkDir(filepath.Join(root, "examples"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".cases.yaml") {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		text, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dec := yamlv3.NewDecoder(bytes.NewReader(text))
		for i := 0; ; i++ {
			var doc map[string]any
			if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", rel, err)
			}
			if doc["kind"] == nil {
				configs[rel] = doc
				continue
			}
			if doc["kind"] != "ConfigMap" {
				continue
			}
			data, _ := doc["data"].(map[string]any)
			for name, v := range data {
				var inner map[string]any
				if err := yamlv3.Unmarshal([]byte(v.(string)), &inner); err != nil {
					t.Fatalf("%s: ConfigMap key %s: %v", rel, name, err)
				}
				configs[rel+" (ConfigMap "+name+")"] = inner
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return configs
}

func TestEveryExampleConfigValidatesAgainstTheSchema(t *testing.T) {
	t.Parallel()
	schema := compileSchema(t)
	configs := exampleConfigs(t)
	if len(configs) < 10 {
		t.Fatalf("found %d example configs, want the dozen or so in examples/", len(configs))
	}
	for name, cfg := range configs {
		if err := schema.Validate(asJSON(t, cfg)); err != nil {
			t.Errorf("%s does not validate against %s: %v", name, schemaFile, err)
		}
	}
}

func TestTheSchemaRefusesWhatTheLoaderRefuses(t *testing.T) {
	t.Parallel()
	schema := compileSchema(t)
	tests := []struct {
		name string
		yaml string
	}{
		{"An unknown top-level key is refused.", "servers: {}\nlisen: stdio\n"},
		{"An unknown server key is refused.", "servers: {fs: {comand: npx}}\n"},
		{"A list where a string belongs is refused.", "servers: {fs: {command: [npx]}}\n"},
		{"A string where a list belongs is refused.", "servers: {fs: {command: npx, args: -y}}\n"},
		{"A duration without a unit is refused.", "ask: {timeout: 30}\n"},
		{"A decision that is no decision is refused.", "policy: {default: maybe}\n"},
		{"A sandbox that is neither off, on nor a map is refused.", "sandbox: sometimes\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var doc map[string]any
			if err := yamlv3.Unmarshal([]byte(tt.yaml), &doc); err != nil {
				t.Fatal(err)
			}
			if err := schema.Validate(asJSON(t, doc)); err == nil {
				t.Errorf("the schema accepts %q", tt.yaml)
			}
			path := filepath.Join(t.TempDir(), "mcpwarden.yaml")
			if err := os.WriteFile(path, []byte(tt.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := LoadOffline(path, nil); err == nil {
				t.Errorf("the loader accepts %q, which the schema refuses", tt.yaml)
			}
		})
	}
}
