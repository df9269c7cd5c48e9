package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/mcpwarden/mcpwarden/internal/pin"
)

func newPinCmd(g *globals) *cobra.Command {
	var (
		configPath string
		update     bool
		asJSON     bool
	)
	cmd := &cobra.Command{
		Use:   "pin --config FILE [--update]",
		Short: "Compare the upstream tools with the pinned definitions, and accept changes",
		Long: `pin starts the upstream servers, compares every tool's definition (title,
description, input and output schema, annotations) with the one pinned in the
lock file (pin.lock, default mcpwarden.lock next to the config) and prints
each difference. With --update it pins what the servers list now, accepting
the changes: a running mcpwarden lifts on_tool_change for them at its next
start or reload.

Exit status: 0 nothing changed (or --update accepted the changes), 1 there
are changes, or an upstream failed to start, 2 the config is invalid.
--json prints the comparison as one JSON object.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := loadSetup(configPath)
			if err != nil {
				return err
			}
			printLint(cmd.ErrOrStderr(), st)
			lock, err := pin.Load(st.LockPath())
			if err != nil {
				return &codeError{code: exitUsage, err: err}
			}
			listing, _, err := listUpstreams(cmd, st, g, "error")
			if err != nil {
				return err
			}
			defer listing.Close()

			out := cmd.OutOrStdout()
			if asJSON {
				out = io.Discard
			}
			rep := &pinReport{Lock: lock.Path(), Updated: update, Servers: []pinServer{}}
			var changes int
			failed := listing.Failed()
			for _, l := range listing.Servers {
				if l.Err != nil {
					fmt.Fprintf(out, "error: %v\n", l.Err)
					rep.Servers = append(rep.Servers, pinServer{Server: l.Server, Changes: []pinChange{}, Error: l.Err.Error()})
					continue
				}
				srv := pinServer{Server: l.Server, Pinned: lock.Known(l.Server), Tools: len(l.Tools)}
				if !srv.Pinned {
					fmt.Fprintf(out, "%s: not pinned yet (%d tools)\n", l.Server, len(l.Tools))
					changes++
				}
				chs := lock.Check(l.Server, l.Tools)
				for _, ch := range chs {
					fmt.Fprintf(out, "%s\n", ch)
					changes++
				}
				srv.Changes = newPinChanges(chs)
				rep.Servers = append(rep.Servers, srv)
				if update {
					if err := lock.Update(l.Server, l.Tools); err != nil {
						return err
					}
				}
			}
			switch {
			case update:
				if err := lock.Save(); err != nil {
					return err
				}
				fmt.Fprintf(out, "pinned the current definitions in %s\n", lock.Path())
			case changes == 0 && failed == 0:
				fmt.Fprintf(out, "every tool matches %s\n", lock.Path())
			}
			if asJSON {
				rep.Changes = changes
				if err := rep.write(cmd.OutOrStdout()); err != nil {
					return err
				}
			}
			if failed > 0 || (changes > 0 && !update) {
				return &codeError{code: exitError, err: errSilent}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&configPath, "config", "c", "", "config file")
	cmd.Flags().BoolVar(&update, "update", false, "pin what the servers list now, accepting every change")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the comparison as one JSON object")
	return cmd
}
