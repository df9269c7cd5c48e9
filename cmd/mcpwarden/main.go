// Command mcpwarden is a permission-enforcing proxy for the Model Context
// Protocol: clients connect to it instead of to their MCP servers, and it
// checks every tool call against the policy in its config.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := execute(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
