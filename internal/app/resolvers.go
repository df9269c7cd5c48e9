package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/approvals"
	"github.com/mcpwarden/mcpwarden/internal/config"
	"github.com/mcpwarden/mcpwarden/internal/state"
)

// StartResolvers builds the out-of-band resolvers the config asks for, in
// the order of docs/design.md, "Asking a human": the local approvals page (whose listener it
// starts, printing the page's link with its token to stderr and writing
// the token file), then the external resolver. stop shuts them down and
// removes the token file; it is never nil, and idempotent.
func StartResolvers(ctx context.Context, cfg *config.Config, stderr io.Writer, logger *slog.Logger) (resolvers []approvals.Resolver, stop func(), err error) {
	return startResolvers(ctx, cfg, nil, stderr, logger)
}

// startResolvers is StartResolvers with the approvals page's asks listed
// and answered in shared, the state replicas share, when it is set.
func startResolvers(ctx context.Context, cfg *config.Config, shared state.Asks, stderr io.Writer, logger *slog.Logger) (resolvers []approvals.Resolver, stop func(), err error) {
	stop = func() {}
	if cfg.Ask.Approvals == config.ApprovalsLocal {
		broker, stopPage, err := startApprovalsPage(ctx, cfg, shared, stderr, logger)
		if err != nil {
			return nil, stop, err
		}
		stop = stopPage
		resolvers = append(resolvers, broker)
	}
	r := cfg.Ask.Resolver
	if len(r.Command) > 0 {
		argv := append([]string(nil), r.Command...)
		if strings.ContainsRune(argv[0], filepath.Separator) && !filepath.IsAbs(argv[0]) {
			argv[0] = filepath.Join(cfg.Dir, argv[0]) // relative to the config, like cwd
		}
		resolvers = append(resolvers, &approvals.Command{Argv: argv, Timeout: r.Timeout})
	}
	if r.URL != "" {
		secret := os.Getenv(r.SecretEnv)
		if secret == "" {
			stop()
			return nil, func() {}, &ConfigError{fmt.Errorf("ask.resolver.secret_env: environment variable %s is empty or not set", r.SecretEnv)}
		}
		resolvers = append(resolvers, &approvals.URL{URL: r.URL, Secret: []byte(secret), Timeout: r.Timeout})
	}
	return resolvers, stop, nil
}

// startApprovalsPage listens on ask.approvals_listen and serves the
// approvals page until stop is called.
func startApprovalsPage(ctx context.Context, cfg *config.Config, shared state.Asks, stderr io.Writer, logger *slog.Logger) (*approvals.Broker, func(), error) {
	ln, err := listenApprovals(cfg.Ask.ApprovalsListen, config.DefaultApprovalsListen, logger)
	if err != nil {
		return nil, nil, err
	}
	bound := ln.Addr().(*net.TCPAddr)
	tf := approvals.TokenFile{URL: "http://" + bound.String() + "/", Token: approvals.NewToken(), PID: os.Getpid()}
	broker := approvals.NewBroker(&approvals.BrokerOptions{URL: tf.URL, Notify: desktopNotifier(tf.URL, logger), Shared: shared})
	h, err := approvals.NewHandler(broker, approvals.HandlerOptions{Token: tf.Token, Hosts: approvals.LoopbackHosts(bound.Port)})
	if err != nil {
		ln.Close()
		return nil, nil, err
	}
	path, err := privateTokenFile(cfg)
	if err != nil {
		ln.Close()
		return nil, nil, err
	}
	if err := approvals.WriteTokenFile(path, tf); err != nil {
		ln.Close()
		return nil, nil, fmt.Errorf("ask.token_file: %w", err)
	}
	// Straight to stderr, not through the logger: the redactor would hide
	// the token, and the human needs it.
	fmt.Fprintf(stderr, "mcpwarden: approvals page (keep this link private): %s\nmcpwarden: or use `mcpwarden approvals --token-file %s`\n", tf.PageURL(), path)

	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- approvals.Serve(sctx, ln, h) }()
	stop := sync.OnceFunc(func() {
		broker.Close()
		cancel()
		if err := <-done; err != nil {
			logger.Warn("approvals page", "err", err)
		}
		if err := approvals.RemoveTokenFile(path, tf.Token); err != nil {
			logger.Warn("removing the approvals token file", "path", path, "err", err)
		}
	})
	return broker, stop, nil
}

// listenApprovals listens on addr, the configured ask.approvals_listen,
// else on def. When def is taken (another mcpwarden has its page there:
// each stdio session of a client starts its own) it listens on a free
// loopback port instead, with a warning, rather than not starting: the
// page's link is printed at start and `mcpwarden approvals` finds it. An
// address the config names must be had.
func listenApprovals(addr, def string, logger *slog.Logger) (net.Listener, error) {
	ln, err := net.Listen("tcp", cmp.Or(addr, def))
	if err == nil || addr != "" || !errors.Is(err, syscall.EADDRINUSE) {
		if err != nil {
			return nil, fmt.Errorf("ask.approvals_listen: %w", err)
		}
		return ln, nil
	}
	host, _, _ := net.SplitHostPort(def)
	if ln, err = net.Listen("tcp", net.JoinHostPort(host, "0")); err != nil {
		return nil, fmt.Errorf("ask.approvals_listen: %w", err)
	}
	logger.Warn("the approvals page's usual address is taken (another mcpwarden?): it is on another port; set ask.approvals_listen to fix it", "usual", def, "now", ln.Addr().String())
	return ln, nil
}

// privateTokenFile is where the approvals token goes: ask.token_file, or
// a file in mcpwarden's private state directory (created 0700), out of
// reach of the servers (the built-in self-protection covers both).
func privateTokenFile(cfg *config.Config) (string, error) {
	path, err := cfg.TokenFilePath(os.Getenv)
	if err != nil {
		return "", fmt.Errorf("ask.token_file: %w", err)
	}
	if cfg.Ask.TokenFile == "" {
		if err := config.MakeStateDir(filepath.Dir(path)); err != nil {
			return "", fmt.Errorf("ask.token_file: %w", err)
		}
	}
	return path, nil
}

// desktopNotifier returns a notification for each new pending ask through
// notify-send, when it is installed and a desktop session is there; else
// nil.
func desktopNotifier(url string, logger *slog.Logger) func(approvals.Request) {
	prog, err := exec.LookPath("notify-send")
	if err != nil || (os.Getenv("DBUS_SESSION_BUS_ADDRESS") == "" && os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "") {
		return nil
	}
	return func(r approvals.Request) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		// notify-send reads a little markup in the body: escape it.
		body := html.EscapeString(fmt.Sprintf("%s (ask %s) waits for approval at %s", r.Tool, r.ID, url))
		if err := exec.CommandContext(ctx, prog, "--app-name=mcpwarden", "mcpwarden: approval needed", body).Run(); err != nil {
			logger.Debug("desktop notification", "err", err)
		}
	}
}
