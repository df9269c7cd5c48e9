package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/spf13/cobra"

	"github.com/mcpwarden/mcpwarden/internal/app"
	"github.com/mcpwarden/mcpwarden/internal/config"
	"github.com/mcpwarden/mcpwarden/proxy"
	"github.com/mcpwarden/mcpwarden/proxy/naming"
	"github.com/mcpwarden/mcpwarden/proxy/toolscreen"
	"github.com/mcpwarden/mcpwarden/rules"
)

// errSilent ends a command with an exit code and nothing more to say: the
// command already printed why.
var errSilent = errors.New("")

func newValidateCmd(g *globals) *cobra.Command {
	var (
		configPath string
		offline    bool
		strict     bool
		asJSON     bool
	)
	cmd := &cobra.Command{
		Use:   "validate --config FILE",
		Short: "Check the whole config and lint the policy against the upstream tools",
		Long: `validate loads and checks the whole config (keys, values, every rule). Unless
--offline, it then starts the upstream servers, lists their tools, checks
the wire names for collisions and lints the policy: allow rules no call can
reach, rules that match no known tool, deny rules on an argument the tool's
schema marks optional (a call that omits it is not denied), deny and ask
rules on a path key a tool does not take while it takes another (use
@path), duplicate rules; it names tool arguments called like a path
(snapshotDir, config_file, ...) that are not in path_keys, and a stdio
server without cwd given another directory as an argument (where
server-filesystem reads relative paths; the rules read them there and
against cwd, so an allow must hold for both).

Exit status: 0 valid (lint findings are warnings, unless --strict), 1 a
server failed to start or (with --strict) there are findings, 2 the config
is invalid. --json prints the result as one JSON object (on stdout, with
the exit status the same).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep := newValidateReport(configPath, offline)
			out := cmd.OutOrStdout()
			if asJSON {
				out = io.Discard
			}
			// done ends the command with err, printing the report first
			// with --json.
			done := func(err error) error {
				if asJSON {
					if werr := rep.write(cmd.OutOrStdout()); werr != nil {
						return werr
					}
				}
				return err
			}
			load := config.Load
			if offline {
				load = config.LoadOffline
			}
			st, err := loadSetupWith(configPath, load, out)
			if err != nil {
				rep.invalid(err)
				return done(err)
			}
			rep.Valid, rep.Config, rep.Servers = true, st.Config.File, len(st.Config.Servers)
			rep.Warnings = append(rep.Warnings, st.Config.Warnings...)
			fmt.Fprintf(out, "config %s is valid: %d servers\n", st.Config.File, len(st.Config.Servers))
			rep.Shadow = shadowScope(st.Policy)
			printShadow(out, rep.Shadow)
			for _, w := range st.Config.SandboxWarnings() {
				fmt.Fprintf(out, "warning: %s\n", w)
				rep.Warnings = append(rep.Warnings, w)
			}
			lint := printLint(out, st)
			if offline {
				rep.addLint(lint)
				if strict && len(lint) > 0 {
					return done(&codeError{code: exitError, err: fmt.Errorf("%d config warnings (--strict)", len(lint))})
				}
				return done(nil)
			}
			listing, _, err := listUpstreams(cmd, st, g, "warn")
			if err != nil {
				return done(err)
			}
			defer listing.Close()

			scheme := st.Naming()
			var known []rules.ToolInfo
			var poisoned []rules.Finding
			for _, l := range listing.Servers {
				if l.Err != nil {
					fmt.Fprintf(out, "error: %v\n", l.Err)
					rep.Errors = append(rep.Errors, l.Err.Error())
					continue
				}
				if l.Sandbox != "" {
					fmt.Fprintf(out, "sandbox: %s: %s\n", l.Server, l.Sandbox)
					if rep.Sandboxes == nil {
						rep.Sandboxes = map[string]string{}
					}
					rep.Sandboxes[l.Server] = l.Sandbox
				}
				for _, t := range l.Tools {
					if why := toolscreen.Tool(t); why != "" {
						poisoned = append(poisoned, rules.Finding{Where: naming.Canonical(l.Server, t.Name), Message: "looks aimed at the model: its " + why})
					}
					props := t.InputSchema.Properties
					known = append(known, rules.ToolInfo{Server: l.Server, Name: t.Name, Optional: optional(props, t.InputSchema.Required),
						Keys: slices.Sorted(maps.Keys(props)), StringKeys: stringKeys(props)})
				}
			}
			failed, listed := listing.Failed(), listing.Up()
			if _, err := scheme.Names(listed); err != nil {
				rep.Errors = append(rep.Errors, err.Error())
				return done(&codeError{code: exitUsage, err: err})
			}
			// Rules may name a server's request kinds too
			// (mcp:fs:resources/read), which match no tool: those the
			// server offers by its capabilities.
			lintKnown := slices.Clone(known)
			for name := range listed {
				_, caps, err := listing.Pool.Session(name)
				for _, kind := range proxy.RequestKinds() {
					if err == nil && !proxy.Offers(caps, kind) {
						continue
					}
					lintKnown = append(lintKnown, rules.ToolInfo{Server: name, Name: kind})
				}
			}
			findings := st.Policy.Lint(lintKnown)
			for _, f := range findings {
				if f.Rule == "" { // about a label or gate as a whole
					fmt.Fprintf(out, "warning: %s %s\n", f.Where, f.Message)
					continue
				}
				fmt.Fprintf(out, "warning: %s: %q %s\n", f.Where, f.Rule, f.Message)
			}
			unlisted := st.Policy.UnlistedPathKeys(known)
			for _, f := range unlisted {
				fmt.Fprintf(out, "warning: %s %s\n", f.Where, f.Message)
			}
			findings = append(findings, unlisted...)
			roots := rootFindings(st)
			for _, f := range roots {
				fmt.Fprintf(out, "warning: %s: %s\n", f.Where, f.Message)
			}
			findings = append(findings, roots...)
			for _, f := range poisoned {
				fmt.Fprintf(out, "warning: %s %s\n", f.Where, f.Message)
			}
			findings = append(findings, poisoned...)
			rep.addLint(lint)
			rep.addFindings(findings)
			rep.Tools = len(known)
			fmt.Fprintf(out, "%d tools on %d servers, %d lint findings\n", len(known), len(listing.Servers)-failed, len(rep.Findings))
			switch {
			case failed > 0:
				return done(&codeError{code: exitError, err: fmt.Errorf("%d upstream servers failed to start", failed)})
			case strict && len(rep.Findings) > 0:
				return done(&codeError{code: exitError, err: errSilent})
			}
			return done(nil)
		},
	}
	cmd.Flags().StringVarP(&configPath, "config", "c", "", "config file")
	cmd.Flags().BoolVar(&offline, "offline", false, "check the config only; do not start the upstream servers")
	cmd.Flags().BoolVar(&strict, "strict", false, "exit 1 when the lint finds anything")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as one JSON object")
	return cmd
}

// rootFindings warns of each stdio server without a cwd that is given an
// existing directory other than its root (config.ExtraRoots). Servers such
// as server-filesystem join a relative path to that directory; the rules
// read it both there and against the root (where mcpwarden runs), so denies
// hold, but an allow on the served directory never covers a relative path.
func rootFindings(s *app.Setup) []rules.Finding {
	var fs []rules.Finding
	for _, name := range s.Config.ServerNames() {
		srv := s.Config.Servers[name]
		if srv.EffectiveTransport() != config.TransportStdio || srv.Cwd != "" {
			continue
		}
		extra := s.Config.ExtraRoots(name, s.WorkDir)
		if len(extra) == 0 {
			continue
		}
		fs = append(fs, rules.Finding{Where: "servers." + name, Message: fmt.Sprintf(
			"has no cwd, so the rules join relative paths to %q (where mcpwarden runs) as well as to the directory %q it is given, "+
				"against which a server such as server-filesystem resolves them, and an allow must hold for both; set cwd: %q",
			s.Config.Root(name, s.WorkDir), extra[0], extra[0])})
	}
	return fs
}

// stringKeys returns the schema properties whose type is string or an
// array of strings (a type list holding one counts), sorted.
func stringKeys(props map[string]any) []string {
	var out []string
	for k, v := range props {
		schema, _ := v.(map[string]any)
		if hasType(schema, "string") || (hasType(schema, "array") && hasType(asMap(schema["items"]), "string")) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// hasType reports whether a JSON schema's type is, or lists, want.
func hasType(schema map[string]any, want string) bool {
	switch t := schema["type"].(type) {
	case string:
		return t == want
	case []any:
		return slices.Contains(t, any(want))
	}
	return false
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// optional returns the schema properties that are not required, sorted.
func optional(props map[string]any, required []string) []string {
	var out []string
	for k := range props {
		if !slices.Contains(required, k) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}
