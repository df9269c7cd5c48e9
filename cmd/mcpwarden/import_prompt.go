package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpwarden/mcpwarden/internal/clientconfig"
)

// claudeSettingsFile is the Claude Code settings file import lets
// mcpwarden's tools through in: --settings if given; for the user's
// ~/.claude.json, ~/.claude/settings.json; else the project's
// .claude/settings.local.json, which Claude Code keeps out of git, as the
// choice is the user's.
func claudeSettingsFile(flag, clientFile, project, home string) string {
	switch {
	case flag != "":
		return flag
	case home != "" && clientFile == filepath.Join(home, ".claude.json"):
		return filepath.Join(home, ".claude", "settings.json")
	}
	return filepath.Join(project, ".claude", "settings.local.json")
}

// letThroughClaudeCode adds mcpwarden's entry to permissions.allow of the
// Claude Code settings file at path (created if missing, backed up if
// not), and says so.
func letThroughClaudeCode(stderr io.Writer, path string) error {
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("reading Claude Code settings: %w", err)
	}
	existed := err == nil
	perm := clientconfig.ClaudePermission("")
	out, changed, err := clientconfig.AllowInClaudeSettings(data, perm)
	if err != nil {
		return usageErr("%s: %w", path, err)
	}
	if changed {
		if existed {
			backup, err := backupFile(path, data)
			if err != nil {
				return err
			}
			fmt.Fprintf(stderr, "backed up %s to %s\n", path, backup)
		} else if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return err
		}
		if err := replaceFile(path, out); err != nil {
			return err
		}
	}
	fmt.Fprintf(stderr, "one prompt per call: Claude Code lets mcpwarden's tools through its own prompt (%q in permissions.allow of %s); "+
		"mcpwarden decides every call and asks you itself for those its policy says ask. --client-prompt keep leaves Claude Code's prompt on\n", perm, path)
	// Claude Code's ask beats its allow: an ask entry on mcpwarden's tools
	// still prompts.
	if p, err := clientconfig.ParsePermissions(out); err == nil {
		for _, e := range p.Ask {
			if e == perm || strings.HasPrefix(e, perm+"__") {
				fmt.Fprintf(stderr, "note: permissions.ask of %s holds %q, which Claude Code still asks for, before mcpwarden: remove it for one prompt per call\n", path, e)
			}
		}
	}
	return nil
}

// reportClientPrompt says, for a client whose settings import does not
// change (or for any client without --write), how each call comes to be
// asked at most once.
func reportClientPrompt(stderr io.Writer, f clientconfig.Format, o importOptions, settings string) {
	if o.clientPrompt == clientconfig.PromptKeep {
		fmt.Fprintf(stderr, "--client-prompt keep: %s's own prompt stays on, so a call may be asked twice, by %s and by mcpwarden\n", f, f)
		return
	}
	switch {
	case f == clientconfig.ClaudeCode:
		fmt.Fprintf(stderr, "one prompt per call: add %q to permissions.allow in %s (--write does it), so that Claude Code does not ask before what mcpwarden decides and asks about itself\n",
			clientconfig.ClaudePermission(""), settings)
	case f == clientconfig.OpenCode:
		fmt.Fprintln(stderr, "one prompt per call: with --write, if opencode.json's permission asks before tools, a \"mcpwarden_*\": \"allow\" rule lets mcpwarden's through, as mcpwarden decides and asks itself")
	default:
		if advice := clientconfig.PromptAdvice(f, ""); advice != "" {
			fmt.Fprintln(stderr, "one prompt per call:", advice)
		}
	}
}
