package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestDockerfileBuildsWithTheShippedFlags(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for l := range strings.Lines(string(data)) {
		if strings.HasPrefix(l, "RUN ") && strings.Contains(l, "go build") {
			line = strings.ReplaceAll(l, `"`, "")
		}
	}
	if line == "" {
		t.Fatal("no RUN ... go build line in the Dockerfile")
	}
	for _, arg := range append([]string{"CGO_ENABLED=0"}, shippedBuildArgs...) {
		if !strings.Contains(line, arg) {
			t.Errorf("the Dockerfile builds with %q, without %s that the bench measures with", strings.TrimSpace(line), arg)
		}
	}
}

// TestShippedBuildPrunesUnusedMethods guards the idle RSS: a dependency
// that executes templates (or otherwise calls methods by reflection on
// arbitrary values) makes the linker keep every exported method, 11 MB of
// binary and 3.5 MB of idle RSS.
func TestShippedBuildPrunesUnusedMethods(t *testing.T) {
	if testing.Short() {
		t.Skip("builds mcpwarden")
	}
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "mcpwarden")
	args := slices.DeleteFunc(slices.Clone(shippedBuildArgs), func(a string) bool { return strings.HasPrefix(a, "-ldflags") })
	build := exec.CommandContext(t.Context(), "go", append(append([]string{"build"}, args...), "-o", bin, "./cmd/mcpwarden")...)
	build.Dir = ".."
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.CommandContext(t.Context(), "go", "tool", "nm", bin).Output()
	if err != nil {
		t.Fatalf("go tool nm: %v", err)
	}
	for _, sym := range []string{"text/template.(*state).evalCall", "golang.org/x/net/trace."} {
		if strings.Contains(string(out), " "+sym) {
			t.Errorf("the shipped build links %s: something calls methods by reflection again, and the linker keeps every exported method", sym)
		}
	}
}
