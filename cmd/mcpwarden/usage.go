package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mcpwarden/mcpwarden/internal/spelling"
)

// exitCodes is the exit-code contract every command keeps, as --help
// states it.
const exitCodes = `Exit codes: 0 success; 1 an error while working (an upstream failed to
start for validate, tools or pin; a file could not be written; an audit
chain does not verify; a case of test failed); 2 bad usage (an unknown command or flag, a wrong
number of arguments), a bad config or bad input; check exits 3 for ask and
4 for deny.`

// keepUsageContract makes every usage error under root exit 2 and say
// what was meant: a wrong number of arguments, an unknown command (also
// under a command that only groups others, such as audit, which would
// print its help and exit 0), an unknown flag.
func keepUsageContract(root *cobra.Command) {
	root.SetFlagErrorFunc(flagError)
	// cobra adds these at Execute; added now, they keep the contract too.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	// cobra's help prints "Unknown help topic" for a command that does not
	// exist and exits 0: refuse it as an unknown command instead.
	if help, _, err := root.Find([]string{"help"}); err == nil && help != root && help.Run != nil {
		show := help.Run
		help.Run = nil
		help.RunE = func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				found, rest, err := root.Find(args)
				switch {
				case err != nil || found == root:
					return subcommandArgs(root, args)
				case len(rest) > 0:
					// help audit verfy: cobra stops at audit and shows its help.
					return subcommandArgs(found, rest)
				}
			}
			show(c, args)
			return nil
		}
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		switch {
		case c.HasSubCommands() && !c.Runnable():
			c.Args = subcommandArgs
			c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
		case c.Args != nil:
			check := c.Args
			c.Args = func(c *cobra.Command, args []string) error {
				if err := check(c, args); err != nil {
					return argsError(c, check, args, err)
				}
				return nil
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// usageError is err, a usage error of c, exiting 2 and pointing at c's
// help.
func usageError(c *cobra.Command, err error) error {
	return &codeError{code: exitUsage, err: fmt.Errorf("%w (see %s --help)", err, c.CommandPath())}
}

// argsError is err, the wrong number of arguments to c (whose own check
// is check), said as what c takes: its usage line, or for a command that
// takes none the argument given; a config file given as an argument is
// the --config meant.
func argsError(c *cobra.Command, check cobra.PositionalArgs, args []string, err error) error {
	if len(args) > 0 && check(c, nil) == nil && check(c, args[:1]) != nil {
		err = fmt.Errorf("%s takes no arguments; got %q", c.CommandPath(), args[0])
		if c.Flags().Lookup("config") != nil && configFile(args[0]) {
			err = fmt.Errorf("%w; did you mean --config %s?", err, args[0])
		}
		return usageError(c, err)
	}
	return usageError(c, fmt.Errorf("%w; usage: %s", err, c.UseLine()))
}

// configFile reports whether arg is named like a config file.
func configFile(arg string) bool {
	switch strings.ToLower(filepath.Ext(arg)) {
	case ".yaml", ".yml", ".json", ".toml":
		return true
	}
	return false
}

// subcommandArgs refuses an argument to a command that only groups
// others unless it names one of them, saying which was meant.
func subcommandArgs(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	var names []string
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() {
			names = append(names, sub.Name())
			names = append(names, sub.Aliases...)
		}
	}
	err := fmt.Errorf("unknown command %q for %q", args[0], c.CommandPath())
	if len(names) == 0 {
		return usageError(c, fmt.Errorf("%w: it has no commands; for its help write mcpwarden help %s", err, strings.TrimPrefix(c.CommandPath(), "mcpwarden ")))
	}
	if meant := spelling.Closest(args[0], names); meant != "" {
		err = fmt.Errorf("%w; did you mean %q?", err, meant)
	} else {
		slices.Sort(names)
		err = fmt.Errorf("%w; its commands are %s", err, strings.Join(names, ", "))
	}
	return usageError(c, err)
}

// flagError is a flag's parse error: exit 2, and for an unknown flag the
// one meant.
func flagError(c *cobra.Command, err error) error {
	// A long flag written with one dash, as Go's own tools take them
	// (-run, -json): pflag reads it as shorthands.
	if _, long, ok := strings.Cut(err.Error(), "unknown shorthand flag: "); ok {
		if _, word, ok := strings.Cut(long, " in -"); ok && c.Flags().Lookup(word) != nil {
			return usageError(c, fmt.Errorf("%w; did you mean --%s?", err, word))
		}
	}
	if name, ok := strings.CutPrefix(err.Error(), "unknown flag: --"); ok {
		var names []string
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if !f.Hidden {
				names = append(names, f.Name)
			}
		})
		if meant := spelling.Closest(name, names); meant != "" {
			err = fmt.Errorf("%w; did you mean --%s?", err, meant)
		}
	}
	return usageError(c, err)
}
