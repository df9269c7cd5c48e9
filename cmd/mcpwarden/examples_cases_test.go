package main

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

// exampleConfigFiles returns every mcpwarden config under examples/, by its
// path relative to examples/, with its text: the files, and the configs
// Kubernetes manifests carry in ConfigMaps (named for the manifest).
func exampleConfigFiles(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(examplesDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".yaml" || strings.HasSuffix(path, ".cases.yaml") {
			return err
		}
		rel, _ := filepath.Rel(examplesDir, path)
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if k8sDocs(t, data) == nil {
			out[rel] = data
			return nil
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var doc struct {
				Kind string            `yaml:"kind"`
				Data map[string]string `yaml:"data"`
			}
			if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
				return nil
			} else if err != nil {
				return err
			}
			if doc.Kind == "ConfigMap" && doc.Data["mcpwarden.yaml"] != "" {
				out[rel] = []byte(doc.Data["mcpwarden.yaml"])
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestEveryExampleShipsWithPassingCases: every config in examples/ has
// its cases next to it (X.yaml, X.cases.yaml) — what it promises to
// allow, ask and deny — and they pass. A Kubernetes manifest's cases are
// decided against the config in its ConfigMap.
func TestEveryExampleShipsWithPassingCases(t *testing.T) {
	t.Parallel()
	configs := exampleConfigFiles(t)
	if len(configs) < 15 {
		t.Errorf("found %d example configs, want every one (15 or more)", len(configs))
	}
	orphans, err := filepath.Glob(filepath.Join(examplesDir, "*", "*.cases.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	top, _ := filepath.Glob(filepath.Join(examplesDir, "*.cases.yaml"))
	for _, cases := range append(orphans, top...) {
		rel, _ := filepath.Rel(examplesDir, strings.TrimSuffix(cases, ".cases.yaml")+".yaml")
		if configs[rel] == nil {
			t.Errorf("%s has no config %s next to it: .ci/test pairs X.cases.yaml with X.yaml", cases, filepath.Base(rel))
		}
	}
	for rel, data := range configs {
		t.Run(rel, func(t *testing.T) {
			t.Parallel()
			cases := filepath.Join(examplesDir, strings.TrimSuffix(rel, ".yaml")+".cases.yaml")
			if _, err := os.Stat(cases); err != nil {
				t.Fatalf("examples/%s has no cases: write %s with what it allows, asks and denies (%v)", rel, filepath.Base(cases), err)
			}
			config := filepath.Join(examplesDir, rel)
			if k8sDocs(t, mustRead(t, config)) != nil {
				config = filepath.Join(t.TempDir(), "mcpwarden.yaml")
				if err := os.WriteFile(config, data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			code, out, errOut := run(t, "test", "--config", config, cases)
			if code != 0 {
				t.Errorf("mcpwarden test --config %s %s exited %d:\n%s%s", config, cases, code, out, errOut)
			}
		})
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
