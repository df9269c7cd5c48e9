package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
)

// sandboxExec is macOS's Seatbelt front end.
const sandboxExec = "/usr/bin/sandbox-exec"

// darwinLauncherArgs are the launcher's arguments on macOS, from
// [LaunchArg] on: the limits as JSON, then sandbox-exec's command line.
// The launcher (mcpwarden itself, running none of the server's code) sets
// the limits, which exec keeps, and executes sandbox-exec, which applies
// the profile and executes the server.
func darwinLauncherArgs(l Limits, profile, path string, args []string) ([]string, error) {
	b, err := json.Marshal(l.withDefaults())
	if err != nil {
		return nil, fmt.Errorf("encoding the sandbox limits: %w", err)
	}
	return append([]string{LaunchArg, string(b), sandboxExec, "-p", profile, path}, args...), nil
}

// parseDarwinLauncherArgs reads what darwinLauncherArgs wrote (without
// [LaunchArg]): the limits, and the command to execute, which must be
// sandbox-exec with a profile, so the launcher never runs anything
// unconfined.
func parseDarwinLauncherArgs(args []string) (Limits, []string, error) {
	var l Limits
	if len(args) < 5 || args[1] != sandboxExec || args[2] != "-p" {
		return l, nil, errors.New("the macOS launcher runs only " + sandboxExec + " -p PROFILE COMMAND, after the limits")
	}
	if err := json.Unmarshal([]byte(args[0]), &l); err != nil {
		return l, nil, fmt.Errorf("reading the sandbox limits: %w", err)
	}
	return l.withDefaults(), args[1:], nil
}
