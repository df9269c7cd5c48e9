package main

import (
	"errors"
	"fmt"
	"os"
	"regexp"

	"github.com/spf13/cobra"

	"github.com/mcpwarden/mcpwarden/internal/app"
	"github.com/mcpwarden/mcpwarden/internal/policytest"
)

func newTestCmd() *cobra.Command {
	var (
		configPath string
		run        string
		verbose    bool
		asJSON     bool
	)
	cmd := &cobra.Command{
		Use:   "test --config FILE CASES.yaml...",
		Short: "Run a policy's unit tests: requests and the decision each must get",
		Long: `test decides every case of the case files the way check and the running
proxy would, with the same code, and reports as go test does: each case
that gets another decision (or another deciding rule) than it expects, then
"ok" or "FAIL" for each file. The config is loaded as check loads it, for
mcpwarden started in the config file's directory: relative paths in a
case's arguments decide alike wherever test is run from.

A case file is YAML:

  cases:
    - name: reads a file in the project
      tool: mcp:fs:read_text_file        # or a request kind: mcp:fs:resources/read
      arguments: {path: ./README.md}     # or a JSON object in quotes
      expect: allow                      # allow, ask or deny
      rule: "mcp:fs:read_*"              # optional: the rule that must decide
      profile: ci                        # optional: a client profile
      principal: alice                   # optional: who the client is (@principal)
      after: [untrusted_input]           # optional: labels armed (check's --after)
      roots: [/home/you/project]         # optional: the client's roots (workspace_from_roots)
      over_limit: true                   # optional: beyond every limit's max

--run REGEXP runs only the cases whose name it matches; -v reports every
case; --json reports as go test -json, one event a line.

Exit status: 0 every case passed, 1 a case failed, 2 bad input (the config,
a case file, a flag).`,
		Example: `  mcpwarden test --config mcpwarden.yaml mcpwarden.cases.yaml
  mcpwarden test --config mcpwarden.yaml -v --run 'secret|dotfile' mcpwarden.cases.yaml
  mcpwarden test --config mcpwarden.yaml --json team.cases.yaml ci.cases.yaml`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			opts := policytest.Options{Verbose: verbose, JSON: asJSON}
			if run != "" {
				re, err := regexp.Compile(run)
				if err != nil {
					return &codeError{code: exitUsage, err: fmt.Errorf("--run %q: %w", run, err)}
				}
				opts.Run = re
			}
			st, err := loadOfflineSetupInConfigDir(configPath, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			var suites []*policytest.Suite
			var errs []error
			for _, name := range files {
				s, err := readSuite(st, name)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				suites = append(suites, s)
			}
			if err := errors.Join(errs...); err != nil {
				return &codeError{code: exitUsage, err: err}
			}
			passed, err := policytest.Run(cmd.OutOrStdout(), suites, opts)
			if err != nil {
				return err
			}
			if !passed {
				return &codeError{code: exitError, err: errSilent}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&configPath, "config", "c", "", "config file")
	cmd.Flags().StringVar(&run, "run", "", "run only the cases whose name matches this regular expression")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "report every case, passed or not")
	cmd.Flags().BoolVar(&asJSON, "json", false, "report as go test -json: one JSON event a line")
	return cmd
}

// readSuite reads and parses the case file name and prepares its cases
// to be decided by st.
func readSuite(st *app.Setup, name string) (*policytest.Suite, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("reading cases: %w", err)
	}
	f, err := policytest.Parse(name, data)
	if err != nil {
		return nil, err
	}
	return policytest.NewSuite(st, f)
}
