package testkit

import (
	"errors"
	"strings"
)

// ReadmeSetupSection is the README section holding the two set-up commands
// of a fresh clone: the one that runs mcpwarden, then the one that runs
// the tests.
const ReadmeSetupSection = "## From a fresh clone: the two set-up commands"

// ReadmeSetupCommands returns the commands of readme's set-up section
// (ReadmeSetupSection): the lines of its sh code blocks, comments and
// blank lines left out. It fails if readme has no such section.
func ReadmeSetupCommands(readme string) ([]string, error) {
	_, rest, ok := strings.Cut(readme, "\n"+ReadmeSetupSection+"\n")
	if !ok {
		return nil, errors.New("README.md has no section " + ReadmeSetupSection + ": the fresh-machine set-up commands belong there")
	}
	if next := strings.Index(rest, "\n## "); next >= 0 {
		rest = rest[:next]
	}
	var cmds []string
	in := false
	for _, l := range strings.Split(rest, "\n") {
		switch {
		case strings.HasPrefix(l, "```"):
			in = !in && strings.TrimPrefix(l, "```") == "sh"
		case in && strings.TrimSpace(l) != "" && !strings.HasPrefix(strings.TrimSpace(l), "#"):
			cmds = append(cmds, strings.TrimSpace(l))
		}
	}
	return cmds, nil
}
