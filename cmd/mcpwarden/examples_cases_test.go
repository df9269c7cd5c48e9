package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryExampleShipsWithPassingCases: every config in examples/ has
// its cases next to it (X.yaml, X.cases.yaml) — what it promises to
// allow, ask and deny — and they pass; every cases file has its config
// (.ci/test pairs them so). A Kubernetes manifest's cases are decided
// against the config in its ConfigMap, written to a file of its own.
func TestEveryExampleShipsWithPassingCases(t *testing.T) {
	t.Parallel()
	configs := map[string]bool{}
	for _, ec := range exampleConfigs(t) {
		file, key, embedded := strings.Cut(ec.name, "#")
		configs[file] = true
		t.Run(ec.name, func(t *testing.T) {
			t.Parallel()
			cases := filepath.Join(examplesDir, strings.TrimSuffix(file, ".yaml")+".cases.yaml")
			if _, err := os.Stat(cases); err != nil {
				t.Fatalf("examples/%s has no cases: write %s with what it allows, asks and denies (%v)", file, filepath.Base(cases), err)
			}
			config := filepath.Join(examplesDir, file)
			if embedded {
				config = filepath.Join(t.TempDir(), key)
				if err := os.WriteFile(config, configMapData(t, filepath.Join(examplesDir, file), key), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			code, out, errOut := run(t, "test", "--config", config, cases)
			if code != 0 {
				t.Errorf("mcpwarden test --config %s %s exited %d:\n%s%s", config, cases, code, out, errOut)
			}
		})
	}
	if len(configs) < 15 {
		t.Errorf("found %d example configs, want every one (15 or more)", len(configs))
	}
	all, err := filepath.Glob(filepath.Join(examplesDir, "*.cases.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	deeper, _ := filepath.Glob(filepath.Join(examplesDir, "*", "*.cases.yaml"))
	for _, cases := range append(all, deeper...) {
		rel, _ := filepath.Rel(examplesDir, strings.TrimSuffix(cases, ".cases.yaml")+".yaml")
		if !configs[rel] {
			t.Errorf("%s has no config %s next to it: .ci/test pairs X.cases.yaml with X.yaml", cases, filepath.Base(rel))
		}
	}
}

// configMapData is the text under key in the ConfigMap of the Kubernetes
// manifest at path.
func configMapData(t *testing.T, path, key string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range k8sDocs(t, data) {
		if cm, _ := doc["data"].(map[string]any); doc["kind"] == "ConfigMap" && cm[key] != nil {
			return []byte(cm[key].(string))
		}
	}
	t.Fatalf("%s: no ConfigMap data %s", path, key)
	return nil
}
