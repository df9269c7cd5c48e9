package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/app"
)

// newAuditCmd returns the `audit` command: `audit verify` checks hash chains,
// `audit tail` (alias `show`) prints events for people, `audit repair`
// makes a log with a torn last line writable again.
func newAuditCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Verify and read audit logs",
	}
	cmd.AddCommand(newAuditVerifyCmd(), newAuditTailCmd(), newAuditRepairCmd(), newAuditKeyCmd(), newAuditProveCmd(), newAuditCheckProofCmd())
	return cmd
}

func newAuditRepairCmd() *cobra.Command {
	var partial bool
	cmd := &cobra.Command{
		Use:   "repair FILE",
		Short: "Move a torn last line aside so mcpwarden can write the log again",
		Long: `Repair fixes an audit log whose last write was cut short (a crash, a full
disk), which mcpwarden refuses to append to. It must run while mcpwarden is
stopped (it takes the log's lock). It moves the partial last line into
FILE.torn-<UTC time>, so nothing is destroyed, cuts the log back to its last
whole line, records the repair in the log as a "lost" event, and then verifies
the whole chain (FILE's rotated files first) like audit verify. A log that
ends with a whole line is only verified.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.SilenceUsage = true
			path := args[0]
			out := cmd.OutOrStdout()
			res, err := audit.Repair(path, time.Now())
			if err != nil {
				return err
			}
			if res.Torn == "" {
				fmt.Fprintf(out, "nothing to repair: %s ends with a whole line\n", path)
			} else {
				fmt.Fprintf(out, "moved the torn last line of %s (%d bytes) to %s and recorded it as a lost event\n", res.Torn, res.TornBytes, res.MovedTo)
			}
			files, err := expandRotated([]string{path})
			if err != nil {
				return err
			}
			v, err := audit.VerifyWith(audit.VerifyOptions{Partial: partial}, files...)
			if err != nil {
				return fmt.Errorf("the rest of the log does not verify: %w (%d lines verified before it)", err, v.Lines)
			}
			fmt.Fprintf(out, "ok: %d events in %d files, last sha256 %s\n", v.Lines, v.Files, v.LastSHA256)
			return nil
		},
	}
	cmd.Flags().BoolVar(&partial, "partial", false, "accept a first line that links to deleted lines (oldest rotated files pruned)")
	return cmd
}

func newAuditVerifyCmd() *cobra.Command {
	var (
		exact, partial, asJSON bool
		prev, key, witness     string
	)
	cmd := &cobra.Command{
		Use:   "verify FILE...",
		Short: "Check the hash chains of audit logs, one per replica",
		Long: `Verify checks that every line of an audit log links to the line before it
(prev_sha256). Each FILE is a log of its own, with its own chain, preceded by
its rotated files (FILE-000001.jsonl, ...): give the logs of several replicas
to check them all at once; each is reported on its own line, with the replica
ids its events carry, and every one is checked even after one fails. With
--exact the files given are one chain, in the order given, without rotated
files added. It exits non-zero naming the first broken, missing or reordered
line of each bad chain.

With --key PUB (what mcpwarden audit key prints, or a file holding it) every
signed checkpoint in the log must be signed by that key, cover exactly the lines
before it and hash to their Merkle root, so a log rewritten whole with a fresh
chain fails; a log no checkpoint covers fails too. With --witness FILE (the
audit.witness file) the log must also reach the newest checkpoint the witness
holds and match it: that is what shows lines cut off its end. --json prints one
JSON object per chain.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.SilenceUsage = true
			chains, err := verifyChains(args, exact)
			if err != nil {
				return err
			}
			opts := audit.VerifyOptions{Prev: prev, Partial: partial}
			if opts.Key, opts.Witness, err = app.VerifyKeys(key, witness); err != nil {
				return err
			}
			results, err := audit.VerifyChains(opts, chains...)
			out := cmd.OutOrStdout()
			if asJSON {
				if jerr := printVerifyJSON(out, results); jerr != nil {
					return jerr
				}
				if err != nil {
					return fmt.Errorf("%d of %d audit chains do not verify", countFailed(results), len(results))
				}
				return nil
			}
			if len(chains) == 1 && results != nil {
				if r := results[0]; r.Err == nil {
					fmt.Fprintf(out, "ok: %s\n", chainSummary(r.VerifyResult))
				}
				return err
			}
			for _, r := range results {
				if r.Err != nil {
					fmt.Fprintf(out, "%s: FAILED: %v (%d lines verified before it)\n", r.Chain.Name, r.Err, r.Lines)
					continue
				}
				fmt.Fprintf(out, "%s: ok: %s\n", r.Chain.Name, chainSummary(r.VerifyResult))
			}
			shared := audit.SharedReplicas(results)
			for _, id := range slices.Sorted(maps.Keys(shared)) {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: replica %q wrote more than one of these logs (%s): give every replica an id of its own (replica, MCPWARDEN_REPLICA)\n", id, strings.Join(shared[id], ", "))
			}
			if err != nil {
				return fmt.Errorf("%d of %d audit chains do not verify", countFailed(results), len(results))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&exact, "exact", false, "verify the files given as one chain, in order, without their rotated files")
	f.BoolVar(&partial, "partial", false, "accept a first line that links to deleted lines (oldest rotated files pruned)")
	f.StringVar(&prev, "prev", "", "expected prev_sha256 of the first line (the last sha256 of an earlier verify); one chain only")
	f.StringVar(&key, "key", "", "the public key the checkpoints must be signed by (mcpwarden audit key), or a file holding it")
	f.StringVar(&witness, "witness", "", "the witness file (audit.witness): the log must reach and match its newest checkpoint")
	f.BoolVar(&asJSON, "json", false, "print the result of each chain as a JSON object")
	return cmd
}

// verifyChains are the chains audit verify checks: with exact, the files
// given as one chain; else each file with its rotated files before it.
func verifyChains(args []string, exact bool) ([]audit.Chain, error) {
	if exact {
		return []audit.Chain{{Name: args[len(args)-1], Files: args}}, nil
	}
	chains := make([]audit.Chain, 0, len(args))
	seen := map[string]bool{}
	for _, p := range args {
		if seen[p] {
			continue
		}
		seen[p] = true
		files, err := expandRotated([]string{p})
		if err != nil {
			return nil, err
		}
		chains = append(chains, audit.Chain{Name: p, Files: files})
	}
	return chains, nil
}

// chainSummary is the report of a verified chain.
func chainSummary(r audit.VerifyResult) string {
	var replica string
	switch len(r.Replicas) {
	case 0:
	case 1:
		replica = fmt.Sprintf(", replica %s", r.Replicas[0])
	default:
		replica = fmt.Sprintf(", replicas %s", strings.Join(r.Replicas, " then "))
	}
	out := fmt.Sprintf("%d events in %d files%s, last sha256 %s", r.Lines, r.Files, replica, r.LastSHA256)
	if r.Checkpoints > 0 {
		out += fmt.Sprintf("; %d checkpoints, the last over %d lines, %d lines after it not yet signed", r.Checkpoints, r.Signed, r.Unsigned)
	}
	if r.Witnessed > 0 {
		out += fmt.Sprintf("; the witness's checkpoint of %d lines matches", r.Witnessed)
	}
	return out
}

func countFailed(results []audit.ChainResult) int {
	n := 0
	for _, r := range results {
		if r.Err != nil {
			n++
		}
	}
	return n
}

// expandRotated puts the rotated files of each path before it, once each.
func expandRotated(paths []string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	for _, p := range paths {
		files, err := audit.Files(p)
		if err != nil {
			return nil, err
		}
		if len(files) == 0 || files[len(files)-1] != p {
			files = append(files, p) // missing: let Verify report it
		}
		for _, f := range files {
			if !seen[f] {
				seen[f] = true
				out = append(out, f)
			}
		}
	}
	return out, nil
}

func newAuditTailCmd() *cobra.Command {
	var (
		server, decision, outcome, event, session, since string
		lines                                            int
		follow, all, raw                                 bool
	)
	cmd := &cobra.Command{
		Use:     "tail FILE",
		Aliases: []string{"show"},
		Short:   "Print audit events, one line each",
		Long: `Tail prints the events of an audit log, one line per event: time, event,
decision, tool, rule, granted_by, outcome, duration, ... Filters combine; --decision keeps
only decision events; --outcome keeps the events of asked requests that ended so
(allowed or refused), whoever settled them. With --follow it keeps printing events as they are written,
across rotations, until interrupted.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.SilenceUsage = true
			path := args[0]
			filter := audit.Filter{Server: server, Decision: decision, Session: session}
			if err := filter.Outcome.UnmarshalText([]byte(outcome)); err != nil {
				return fmt.Errorf("--outcome %q: want allowed or refused", outcome)
			}
			switch decision {
			case "", audit.DecisionAllow, audit.DecisionAsk, audit.DecisionDeny:
			default:
				return fmt.Errorf("--decision %q: want allow, ask or deny", decision)
			}
			if event != "" {
				if err := filter.Event.UnmarshalText([]byte(event)); err != nil {
					return fmt.Errorf("--event: %w", err)
				}
			}
			if since != "" {
				t, err := audit.ParseSince(since, time.Now())
				if err != nil {
					return err
				}
				filter.Since = t
			}
			if lines < 0 {
				return fmt.Errorf("--lines %d: negative", lines)
			}
			files := []string{path}
			if all {
				var err error
				if files, err = expandRotated(files); err != nil {
					return err
				}
			}
			out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
			var last []string // the last --lines matches, when limited
			emit := func(s string) {
				if lines == 0 {
					fmt.Fprintln(out, s)
					return
				}
				if len(last) == lines {
					last = last[1:]
				}
				last = append(last, s)
			}
			show := func(file string, line []byte, e audit.Event, err error) {
				switch {
				case err != nil:
					fmt.Fprintf(errOut, "%s: %v\n", file, err)
				case !filter.Match(e):
				case raw:
					emit(string(line))
				default:
					emit(audit.Format(e))
				}
			}
			var offset int64
			for i, file := range files {
				f, err := os.Open(file)
				if err != nil {
					return err
				}
				isLast := i == len(files)-1
				off, err := audit.ReadEvents(f, func(_ int, line []byte, e audit.Event, err error) error {
					if follow && isLast && errors.Is(err, audit.ErrIncompleteLine) {
						return nil // still being written: --follow picks it up
					}
					show(file, line, e, err)
					return nil
				})
				f.Close()
				if err != nil {
					return fmt.Errorf("reading %s: %w", file, err)
				}
				offset = off
			}
			for _, s := range last {
				fmt.Fprintln(out, s)
			}
			if !follow {
				return nil
			}
			lines = 0
			ctx, stop := signal.NotifyContext(contextOf(cmd), os.Interrupt)
			defer stop()
			return audit.Follow(ctx, path, offset, 0, func(line []byte) error {
				var e audit.Event
				err := json.Unmarshal(line, &e)
				show(path, line, e, err)
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&server, "server", "", "only events of this server")
	f.StringVar(&decision, "decision", "", "only decisions of this outcome: allow, ask or deny (in shadow mode, the would-be decision)")
	f.StringVar(&outcome, "outcome", "", "only asked (or shadowed) requests that ended so: allowed or refused")
	f.StringVar(&event, "event", "", "only events of this kind: decision, result, tools_changed, upstream, lost")
	f.StringVar(&session, "session", "", "only events of this session")
	f.StringVar(&since, "since", "", "only events since a duration ago (1h, 30m, 7d) or a time (RFC 3339)")
	f.IntVarP(&lines, "lines", "n", 0, "print only the last N matching events (0: all)")
	f.BoolVarP(&follow, "follow", "f", false, "keep printing new events until interrupted")
	f.BoolVar(&all, "all", false, "read the rotated files of FILE first")
	f.BoolVar(&raw, "json", false, "print the matching lines as JSON instead of the human view")
	return cmd
}

func contextOf(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}
