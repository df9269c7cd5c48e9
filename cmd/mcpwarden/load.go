package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/app"
	"github.com/mcpwarden/mcpwarden/internal/config"
)

// loadSetup loads and validates the config at path and compiles its
// policy. Every failure is a usage error (exit 2) naming the file.
func loadSetup(path string) (*app.Setup, error) { return loadSetupWith(path, config.Load, os.Stderr) }

// loadOfflineSetup is loadSetup for the commands that start no server
// (check, validate --offline, tools --offline): the servers' variables that
// are not set are warnings, not errors (see config.LoadOffline).
func loadOfflineSetup(path string) (*app.Setup, error) {
	return loadSetupWith(path, config.LoadOffline, os.Stderr)
}

// loadOfflineSetupInConfigDir is loadOfflineSetup for mcpwarden started in the
// config file's directory rather than the current one (test: a case's
// relative paths decide alike wherever it is run from).
func loadOfflineSetupInConfigDir(path string, warn io.Writer) (*app.Setup, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	return loadSetupIn(path, config.LoadOffline, filepath.Dir(abs), warn)
}

// loadSetupWith is loadSetup loading with load, the load's warnings
// written to warn.
func loadSetupWith(path string, load func(string, []string) (*config.Config, error), warn io.Writer) (*app.Setup, error) {
	workDir, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	return loadSetupIn(path, load, workDir, warn)
}

// loadSetupIn is loadSetupWith for mcpwarden run in workDir.
func loadSetupIn(path string, load func(string, []string) (*config.Config, error), workDir string, warn io.Writer) (*app.Setup, error) {
	if path == "" {
		return nil, &codeError{code: exitUsage, err: fmt.Errorf("--config FILE is required")}
	}
	cfg, err := load(path, os.Environ())
	if err != nil {
		return nil, &codeError{code: exitUsage, err: err}
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintln(warn, "warning:", w)
	}
	st, err := app.NewSetup(cfg, workDir)
	if err != nil {
		// Each error names its source: the file, or the variable that set the key.
		return nil, &codeError{code: exitUsage, err: cfg.Attribute(err)}
	}
	return st, nil
}

// printLint writes the config's warnings (config.Lint) to w, one a line,
// and returns them.
func printLint(w io.Writer, st *app.Setup) []config.Warning {
	ws := st.Config.Lint()
	for _, x := range ws {
		fmt.Fprintln(w, "warning:", x)
	}
	return ws
}

// setupLogger builds the human log on w, redacted as the audit log is: at
// the --log-level and --log-format flags, else the config's log settings,
// else level and text.
func setupLogger(s *app.Setup, w io.Writer, g *globals, level string) (*slog.Logger, *audit.Redactor, error) {
	redactor, err := audit.NewRedactor(s.Config.Audit)
	if err != nil {
		return nil, nil, &codeError{code: exitUsage, err: fmt.Errorf("config %s: %w", s.Config.File, err)}
	}
	redactor = redactor.ForLogs()
	logger, err := newLogger(w, first(g.logLevel, s.Config.Log.Level, level), first(g.logFormat, s.Config.Log.Format), redactor.ReplaceAttr)
	if err != nil {
		return nil, nil, &codeError{code: exitUsage, err: err}
	}
	return logger, redactor, nil
}

// listUpstreams builds the human log for st on cmd's stderr (see
// setupLogger), starts st's upstreams and lists their tools. The caller
// closes the listing.
func listUpstreams(cmd *cobra.Command, st *app.Setup, g *globals, level string) (*app.Listing, *audit.Redactor, error) {
	logger, redactor, err := setupLogger(st, cmd.ErrOrStderr(), g, level)
	if err != nil {
		return nil, nil, err
	}
	return app.ListUpstreams(cmd.Context(), st, logger, version()), redactor, nil
}

// first returns the first of values that is not "".
func first(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}
