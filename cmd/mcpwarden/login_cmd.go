package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/spf13/cobra"

	"github.com/mcpwarden/mcpwarden/internal/config"
	"github.com/mcpwarden/mcpwarden/internal/oauthlogin"
)

// defaultLoginTimeout bounds the wait for the person to sign in.
const defaultLoginTimeout = 5 * time.Minute

func newLoginCmd() *cobra.Command {
	var (
		configPath string
		open       bool
		timeout    time.Duration
	)
	cmd := &cobra.Command{
		Use:   "login --config FILE SERVER",
		Short: "Sign in to a remote server that needs OAuth, and keep its token",
		Long: `login signs you in to the authorization server of SERVER, a remote server
with an oauth block, so that mcpwarden can call it: it prints a URL to open in
a browser (--open opens one), waits for the authorization server to redirect
back to a listener on 127.0.0.1, and stores the token, encrypted with the key
in MCPWARDEN_TOKEN_KEY (else one kept in the OS keyring, where there is one;
MCPWARDEN_KEYRING=off keeps it out), in the upstream token file under the state
directory. Without a client_id it uses the server's client ID metadata document
(client_metadata_url) if the authorization server takes them, else registers a
client (RFC 7591) and keeps it with the token.
mcpwarden refreshes the token from then on; run login again when it says so.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if configPath == "" {
				return &codeError{code: exitUsage, err: fmt.Errorf("--config FILE is required")}
			}
			// Only the servers are read: no policy is compiled, no upstream started.
			cfg, err := config.Load(configPath, os.Environ())
			if err != nil {
				return &codeError{code: exitUsage, err: err}
			}
			name := args[0]
			srv, ok := cfg.Servers[name]
			switch {
			case !ok:
				return &codeError{code: exitUsage, err: fmt.Errorf("no server %q in %s", name, configPath)}
			case srv.OAuth == nil:
				return &codeError{code: exitUsage, err: fmt.Errorf("server %q has no oauth block: it needs no login", name)}
			case srv.OAuth.EffectiveGrant() != config.GrantAuthorizationCode:
				return &codeError{code: exitUsage, err: fmt.Errorf("server %q uses grant %s: mcpwarden gets its tokens itself, no login needed", name, srv.OAuth.EffectiveGrant())}
			}
			o := oauthlogin.UpstreamOAuth(name, srv, os.Getenv)
			store, err := oauthlogin.OpenStore(os.Getenv)
			if err != nil {
				return err
			}
			if _, err := o.Tokens.GetToken(cmd.Context()); err != nil && !errors.Is(err, transport.ErrNoToken) {
				return err // a client secret not set, a token file that does not decrypt
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			out := cmd.OutOrStdout()
			tok, client, err := oauthlogin.Login(ctx, oauthlogin.Request{
				Server: name, URL: srv.URL, ClientID: srv.OAuth.ClientID, ClientSecret: o.ClientSecret,
				ClientMetadataURL: srv.OAuth.ClientMetadataURL, Scopes: o.Scopes, Store: store,
				Show: func(authURL string) error {
					fmt.Fprintf(out, "Open this URL to sign in to %s:\n\n  %s\n\n", name, authURL)
					if open {
						openBrowser(authURL, cmd.ErrOrStderr())
					}
					return nil
				},
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "Signed in to %s as %s (%s); its token is in %s", name, client.ID, client.How, store.Path())
			if src, ok := store.KeySource(); ok {
				fmt.Fprintf(out, ", encrypted with the key from %s", src)
			}
			if !tok.Expiry.IsZero() {
				fmt.Fprintf(out, " (valid until %s, then refreshed)", tok.Expiry.Format(time.RFC3339))
			}
			fmt.Fprintln(out)
			return nil
		},
	}
	cmd.Flags().StringVarP(&configPath, "config", "c", "", "config file")
	cmd.Flags().BoolVar(&open, "open", false, "open the sign-in URL in a browser")
	cmd.Flags().DurationVar(&timeout, "timeout", defaultLoginTimeout, "how long to wait for the sign-in")
	return cmd
}

// openBrowser opens url with the desktop's opener, if there is one;
// failing that, the printed URL is still there.
func openBrowser(url string, stderr io.Writer) {
	prog := "xdg-open"
	if runtime.GOOS == "darwin" {
		prog = "open"
	}
	c := exec.Command(prog, url)
	if err := c.Start(); err != nil {
		fmt.Fprintf(stderr, "could not open a browser (%v): open the URL yourself\n", err)
		return
	}
	go c.Wait() // reap it; its outcome changes nothing
}
