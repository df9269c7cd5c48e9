package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpwarden/mcpwarden/internal/config"
	"github.com/mcpwarden/mcpwarden/internal/telemetry"
)

// dig walks a decoded YAML document by keys (strings) and indexes (ints).
func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

// TestKubernetesExampleRunsManyReplicas holds examples/kubernetes to
// what "Running many replicas" promises: three replicas sharing Redis, no
// session affinity anywhere, a disruption budget, readiness on /readyz of
// the metrics listener, and each pod's name as its replica id.
func TestKubernetesExampleRunsManyReplicas(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(examplesDir, "kubernetes", "mcpwarden.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	byKind := map[string][]map[string]any{}
	for _, d := range k8sDocs(t, data) {
		byKind[d["kind"].(string)] = append(byKind[d["kind"].(string)], d)
	}
	var deploy, redisDeploy map[string]any
	for _, d := range byKind["Deployment"] {
		switch dig(d, "metadata", "name") {
		case "mcpwarden":
			deploy = d
		case "redis":
			redisDeploy = d
		}
	}
	if deploy == nil || redisDeploy == nil {
		t.Fatal("want Deployments mcpwarden and redis")
	}
	cfg, err := config.Parse([]byte(dig(byKind["ConfigMap"][0], "data", "mcpwarden.yaml").(string)), ".yaml", "/etc/mcpwarden", exampleEnv)
	if err != nil {
		t.Fatal(err)
	}
	_, metricsPort, _ := strings.Cut(cfg.Telemetry.Metrics.Listen, ":")
	container := dig(deploy, "spec", "template", "spec", "containers", 0)
	portNames := map[string]string{}
	for _, p := range dig(container, "ports").([]any) {
		portNames[fmt.Sprint(dig(p, "name"))] = fmt.Sprint(dig(p, "containerPort"))
	}
	checks := []struct {
		name string
		ok   bool
	}{
		{"three replicas", dig(deploy, "spec", "replicas") == 3},
		{"a shared state in Redis", cfg.State != nil && strings.HasPrefix(cfg.State.URL, "redis://") && cfg.State.PasswordEnv != ""},
		{"the metrics listener on the pod network", cfg.Telemetry.Metrics.Listen != "" && !strings.HasPrefix(cfg.Telemetry.Metrics.Listen, "127.")},
		{"readiness on /readyz of the metrics port", dig(container, "readinessProbe", "httpGet", "path") == telemetry.ReadyPath && dig(container, "readinessProbe", "httpGet", "port") == "metrics" && portNames["metrics"] == metricsPort},
		{"liveness on /livez", dig(container, "livenessProbe", "httpGet", "path") == telemetry.LivePath},
		{"the pod name as replica id", dig(container, "env", 0, "name") == "MCPWARDEN_REPLICA" && dig(container, "env", 0, "valueFrom", "fieldRef", "fieldPath") == "metadata.name"},
		{"a disruption budget keeping two", len(byKind["PodDisruptionBudget"]) == 1 && dig(byKind["PodDisruptionBudget"][0], "spec", "minAvailable") == 2},
		{"a Service without affinity", func() bool {
			for _, s := range byKind["Service"] {
				if dig(s, "metadata", "name") == "mcpwarden" {
					a := dig(s, "spec", "sessionAffinity")
					return a == nil || a == "None"
				}
			}
			return false
		}()},
		{"an Ingress without affinity", func() bool {
			for k := range dig(byKind["Ingress"][0], "metadata", "annotations").(map[string]any) {
				if strings.Contains(k, "hash-by") || strings.Contains(k, "affinity") {
					return false
				}
			}
			return true
		}()},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("examples/kubernetes: want %s", c.name)
		}
	}
}
