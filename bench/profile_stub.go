//go:build !profile

package main

import "errors"

// runProfile needs the mcpwarden packages, which the benchmark itself does
// not import (it runs the mcpwarden binary), so that a broken package
// elsewhere in the tree is reported by the build of cmd/mcpwarden instead of
// stopping the harness. Build with -tags profile to get it.
func runProfile([]string) error {
	return errors.New("the profile subcommand is built with -tags profile: go run -tags profile ./bench profile")
}
