package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/mcpwarden/mcpwarden/audit"
	"github.com/mcpwarden/mcpwarden/internal/app"
	"github.com/mcpwarden/mcpwarden/internal/config"
)

func newAuditKeyCmd() *cobra.Command {
	var configPath string
	cmd := &cobra.Command{
		Use:   "key",
		Short: "Print the public key of the audit log's signed checkpoints",
		Long: `Key prints the public key that verifies the audit log's checkpoints: hand it
to auditors, who check a log with audit verify --key and a proof with audit
check-proof. The private key is MCPWARDEN_AUDIT_SIGNING_KEY, else the file
audit.key_file of --config, else audit-signing.key in mcpwarden's state
directory, made there (mode 0600) on first use.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SilenceUsage = true
			cfg := &config.Config{}
			if configPath != "" {
				var err error
				if cfg, err = config.Load(configPath, os.Environ()); err != nil {
					return &codeError{code: exitUsage, err: err}
				}
			}
			k, err := app.AuditSigningKey(cfg, os.Getenv)
			if err != nil {
				return err
			}
			if k == nil {
				return &codeError{code: exitUsage, err: fmt.Errorf("%s: the audit log is not signed (audit.unsigned, or audit.sink none)", configPath)}
			}
			fmt.Fprintln(cmd.OutOrStdout(), k.Public)
			return nil
		},
	}
	cmd.Flags().StringVarP(&configPath, "config", "c", "", "config file (its audit.key_file, audit.sink and audit.unsigned)")
	return cmd
}

func newAuditProveCmd() *cobra.Command {
	var logPath string
	cmd := &cobra.Command{
		Use:   "prove FILE LINE",
		Short: "Print an inclusion proof of one audit line, for an auditor",
		Long: `Prove prints, as JSON, line LINE of the audit file FILE, its inclusion proof in
the log's Merkle tree and the first signed checkpoint that covers it. Whoever
holds the public key (mcpwarden audit key) checks it with audit check-proof,
without the log. FILE's rotated files are read first; for a rotated file, name
the log it belongs to with --log. A line after the last checkpoint cannot be
proved until the next one is written.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.SilenceUsage = true
			line, err := strconv.Atoi(args[1])
			if err != nil {
				return &codeError{code: exitUsage, err: fmt.Errorf("LINE %q: want a line number", args[1])}
			}
			files, err := expandRotated([]string{cmpOr(logPath, args[0])})
			if err != nil {
				return err
			}
			p, err := audit.Prove(files, args[0], line)
			if err != nil {
				return err
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			return enc.Encode(p)
		},
	}
	cmd.Flags().StringVar(&logPath, "log", "", "the log FILE is a rotated file of")
	return cmd
}

func newAuditCheckProofCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "check-proof PUB PROOF",
		Short: "Check an inclusion proof with the public key alone",
		Long: `Check-proof checks a proof printed by audit prove (PROOF a file, or - for
stdin) with the public key PUB (as mcpwarden audit key prints it, or a file
holding it): that the checkpoint is signed by that key and that the line is in
the tree it signs, at its place. It prints the line when it is.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.SilenceUsage = true
			key, err := audit.ParseVerifierKey(args[0])
			if err != nil {
				return &codeError{code: exitUsage, err: err}
			}
			var data []byte
			if args[1] == "-" {
				data, err = io.ReadAll(io.LimitReader(cmd.InOrStdin(), 1<<20+1))
			} else {
				data, err = os.ReadFile(args[1])
			}
			if err != nil {
				return fmt.Errorf("reading the proof: %w", err)
			}
			p, err := audit.ParseProof(data)
			if err != nil {
				return &codeError{code: exitUsage, err: err}
			}
			c, err := p.Check(key)
			if err != nil {
				return errors.New("the proof does not hold: " + err.Error())
			}
			fmt.Fprintf(cmd.OutOrStdout(), "ok: line %d of %s is in its checkpoint of %d lines, signed by the key given\n%s\n", p.Index+1, c.Origin, c.Size, p.Text)
			return nil
		},
	}
}

// printVerifyJSON prints each chain's result as a JSON object.
func printVerifyJSON(w io.Writer, results []audit.ChainResult) error {
	enc := json.NewEncoder(w)
	for _, r := range results {
		out := struct {
			Chain       string   `json:"chain"`
			OK          bool     `json:"ok"`
			Files       int      `json:"files"`
			Lines       int      `json:"lines"`
			LastSHA256  string   `json:"last_sha256"`
			Replicas    []string `json:"replicas,omitempty"`
			Origin      string   `json:"origin,omitempty"`
			Checkpoints int      `json:"checkpoints"`
			Signed      int64    `json:"signed_lines"`
			Unsigned    int64    `json:"unsigned_lines"`
			Witnessed   int64    `json:"witnessed_lines"`
			Error       string   `json:"error,omitempty"`
			File        string   `json:"file,omitempty"`
			Line        int      `json:"line,omitempty"`
		}{Chain: r.Chain.Name, OK: r.Err == nil, Files: r.Files, Lines: r.Lines, LastSHA256: r.LastSHA256, Replicas: r.Replicas,
			Origin: r.Origin, Checkpoints: r.Checkpoints, Signed: r.Signed, Unsigned: r.Unsigned, Witnessed: r.Witnessed}
		if r.Err != nil {
			out.Error = r.Err.Error()
			var ve *audit.VerifyError
			if errors.As(r.Err, &ve) {
				out.File, out.Line = ve.Path, ve.Line
			}
		}
		if err := enc.Encode(out); err != nil {
			return err
		}
	}
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
