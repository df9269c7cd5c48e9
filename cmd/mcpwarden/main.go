// Command mcpwarden is a permission-enforcing proxy for the Model Context
// Protocol: clients connect to it instead of to their MCP servers, and it
// checks every tool call against the policy in its config.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/mcpwarden/mcpwarden/internal/sandbox"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == sandbox.LaunchArg {
		sandbox.Main() // the hidden sandbox launcher; it never returns
	}
	if len(os.Args) > 1 && os.Args[1] == sandbox.SelfTestArg {
		os.Exit(sandbox.SelfTestMain(os.Args[2:])) // what doctor runs in the sandbox
	}
	// Go kills a process that writes to a broken pipe on fd 1 or 2 unless
	// it handles SIGPIPE: a stdio client closing its end mid-result would
	// kill mcpwarden, losing the result events of the calls in flight.
	// Handled, the write fails with EPIPE and the connection ends. It is
	// notified rather than ignored, because an ignored signal stays
	// ignored in the upstreams mcpwarden starts.
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := execute(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	signal.Stop(pipe)
	os.Exit(code)
}
