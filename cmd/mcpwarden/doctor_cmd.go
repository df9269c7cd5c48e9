package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/mcpwarden/mcpwarden/internal/sandbox"
)

func newDoctorCmd() *cobra.Command {
	var (
		asJSON  bool
		disable []string
	)
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check that the sandbox works on this machine",
		Long: `doctor probes the kernel for what the sandbox uses (user namespaces, the
Landlock ABI, seccomp) and says which tier "auto" picks. Then it runs a
self-test, this binary under the real launcher in each available tier, that
attempts forbidden actions: read a key planted in a temporary home, write
outside, execute a file it dropped, connect to a loopback TCP listener, send
UDP, open a raw socket, signal mcpwarden, TIOCSTI, read mcpwarden's
/proc/<pid>/environ, find a planted MCPWARDEN_* variable. Each is blocked,
NOT BLOCKED, or not applicable (it fails without the sandbox too).

doctor exits 1 when an attempt is not blocked, a confinement cannot be
applied, or the sandbox cannot run. --disable treats a kernel feature as
missing, to see what the sandbox does on a kernel without it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o := sandbox.DoctorOptions{}
			for _, d := range disable {
				f, err := sandbox.ParseFeature(d)
				if err != nil {
					return &codeError{code: exitUsage, err: err}
				}
				o.Disable = append(o.Disable, f)
			}
			self, err := os.Executable()
			if err != nil {
				return fmt.Errorf("finding mcpwarden's own path for the launcher: %w", err)
			}
			o.Launcher = self
			c := sandbox.Doctor(cmd.Context(), o)
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				err = enc.Encode(c)
			} else {
				err = c.WriteText(cmd.OutOrStdout())
			}
			if err != nil {
				return err
			}
			if !c.OK {
				return &codeError{code: exitError, err: errSilent}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for scripts")
	cmd.Flags().StringSliceVar(&disable, "disable", nil, "treat a kernel feature as missing: user_namespaces, landlock, landlock_net, landlock_scope, seccomp or mounts")
	return cmd
}
