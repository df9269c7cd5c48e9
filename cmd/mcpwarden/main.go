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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := execute(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
