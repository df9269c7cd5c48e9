// Package apptest builds an app.Setup from a config's text, for the tests
// of the packages that decide through one (policydiff, policytest,
// suggest): the config written in a directory, loaded offline and set up
// with that directory as the working directory, as mcpwarden started in
// the config's directory does. Only tests import it (internal/deps checks).
package apptest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpwarden/mcpwarden/internal/app"
	"github.com/mcpwarden/mcpwarden/internal/config"
)

// Setup writes yaml as dir/mcpwarden.yaml, loads it offline and returns
// its Setup with dir as the working directory, failing t on an error.
func Setup(t testing.TB, dir, yaml string) *app.Setup {
	t.Helper()
	path := filepath.Join(dir, "mcpwarden.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.LoadOffline(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := app.NewSetup(cfg, dir)
	if err != nil {
		t.Fatal(err)
	}
	return st
}
