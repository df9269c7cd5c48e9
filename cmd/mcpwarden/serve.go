package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpwarden/mcpwarden/internal/app"
)

func newServeCmd(g *globals) *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve --config FILE [--profile NAME] [--watch]",
		Short: "Run the proxy: connect to the upstream servers and serve clients",
		Long: `serve loads the config, starts or connects to every upstream server, and
serves MCP clients over stdio (listen: stdio, the default) or streamable HTTP
at /mcp (listen: 127.0.0.1:PORT). Logs go to stderr; in stdio mode stdout
carries only the protocol. An upstream that fails to start is reported and
retried in the background; the others are served.

SIGHUP (and, with --watch, any change to the config file) reloads the
config: it is validated whole, a bad one is refused with the reason logged
and the running one kept; a good one is swapped in for the next call.

SIGINT or SIGTERM shuts down: new calls are refused at once, calls in
progress get --shutdown-grace (10s) to finish, then those still running are
cancelled (the upstream is sent notifications/cancelled, the client gets
"mcpwarden is shutting down"), the upstreams are stopped and mcpwarden exits
with status 0. A second SIGINT or SIGTERM ends the grace period at once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serve(cmd.Context(), g, f, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVarP(&f.config, "config", "c", "", "config file (YAML, JSON or TOML)")
	cmd.Flags().BoolVar(&f.watch, "watch", false, "reload the config when its file changes (SIGHUP always reloads)")
	cmd.Flags().DurationVar(&f.shutdownGrace, "shutdown-grace", defaultShutdownGrace, "how long calls in progress may take to finish after SIGINT or SIGTERM before they are cancelled")
	cmd.Flags().StringVar(&f.profile, "profile", "", "client profile for every session (stdio: one client per process); over HTTP the bearer token selects it")
	return cmd
}

// defaultShutdownGrace is how long calls in progress may take to finish
// after SIGINT or SIGTERM, unless --shutdown-grace says otherwise.
const defaultShutdownGrace = 10 * time.Second

// serveFlags are serve's own flags.
type serveFlags struct {
	config, profile string
	watch           bool
	shutdownGrace   time.Duration
}

// serve is the whole serve command: the config is loaded and every part
// built and validated (app.Start) before the first client is served.
func serve(ctx context.Context, g *globals, f serveFlags, stdin io.Reader, stdout, stderr io.Writer) error {
	st, err := loadSetup(f.config)
	if err != nil {
		return err
	}
	if f.profile != "" {
		if err := st.CheckProfile(f.profile); err != nil {
			return &codeError{code: exitUsage, err: fmt.Errorf("--profile %w", err)}
		}
	}
	logger, _, err := setupLogger(st, stderr, g, "info")
	if err != nil {
		return err
	}
	for _, w := range st.Config.Lint() {
		logger.Warn("config: "+w.Message, "key", w.Key, "at", w.Place)
	}
	a, err := app.Start(ctx, st, app.Options{
		Logger:        logger,
		Stderr:        stderr,
		Profile:       f.profile,
		Version:       version(),
		Load:          func() (*app.Setup, error) { return loadSetup(f.config) },
		Watch:         f.watch,
		ShutdownGrace: f.shutdownGrace,
	})
	if ce := (*app.ConfigError)(nil); errors.As(err, &ce) {
		return &codeError{code: exitUsage, err: ce.Err}
	}
	if err != nil {
		return err
	}
	defer a.Close()
	return a.Serve(ctx, stdin, stdout)
}
