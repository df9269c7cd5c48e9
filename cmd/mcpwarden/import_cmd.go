package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mcpwarden/mcpwarden/internal/clientconfig"
	"github.com/mcpwarden/mcpwarden/internal/config"
	"github.com/mcpwarden/mcpwarden/internal/spelling"
)

// importOptions are the flags of import.
type importOptions struct {
	from      string
	out       string
	settings  string
	command   string
	force     bool
	write     bool
	secretsIn bool
	// secretsEnv keeps literal secrets out of the client file too: the
	// user sets them in the environment mcpwarden runs in.
	secretsEnv bool
	workspace  []string
	// clientPrompt says whether the client's own prompt still asks before
	// mcpwarden's tools.
	clientPrompt clientconfig.ClientPrompt
}

func newImportCmd() *cobra.Command {
	var o importOptions
	cmd := &cobra.Command{
		Use:   "import [--from claude-desktop|claude-code|cursor|vscode|opencode|gemini|codex] [FILE]",
		Short: "Turn a client's MCP config into an mcpwarden config and point the client at it",
		Long: `import reads the MCP servers of a client config (FILE, or the client's usual
file when only --from is given; the format is detected from FILE's name and
content when --from is not given) and writes an mcpwarden config with those
servers and a safe starting policy to --out (default mcpwarden.yaml; an
existing file is kept unless --force). It then prints the client config
section that runs mcpwarden instead, a single stdio entry running
"mcpwarden serve --config <absolute path>"; with --write it applies that to
FILE, keeping every other key and a backup of the original (FILE.bak, or
FILE.bak.N if that exists). --out's folder is created if need be. The
clients: Claude Desktop, Claude Code, Cursor, VS Code, OpenCode, Gemini CLI
(~/.gemini/settings.json) and Codex (~/.codex/config.toml, whose other
tables and comments are kept).

Asks: the config sets ask.approvals: local, so that an ask the client
cannot show waits on the approvals page (its URL is printed at start) and
in mcpwarden approvals. For Codex it also sets ask.elicitation: false:
codex exec declines every question without showing it.

Confinement: every server on this machine gets a workspace, and a path
outside it is asked about (outside_workspace: ask): a filesystem server
its own directories, the others the directories every filesystem server
was given, else the project directory (the one holding FILE, or the
current directory for a file of the user's such as Claude Desktop's);
--workspace DIR (repeatable) sets it instead. Remote servers are not
confined: their paths are not on this machine.

Secrets: a literal secret in a server's env, headers, args or url (a key
named like *TOKEN*, *KEY*, *PASSWORD*..., a well-known token format, a
password in a URL) is never copied: the config gets a ${VAR} reference
instead and import lists the variables mcpwarden needs. --write puts the
literal values into the env of the client's mcpwarden entry, in the file
that held them before, which the client passes on whatever environment it
was started in (Claude Desktop started from the Dock does not see your
shell's), so that the imported setup starts as it is; without --write the
snippet leaves them out and import lists them. --secrets-in-env keeps them
out of the client file too, to be set in the environment mcpwarden runs
in. VS Code ${input:...} prompts are kept and passed to mcpwarden through
the entry's env.

Claude Code permission rules (permissions.allow/ask/deny in FILE or in the
settings file given with --settings) become mcpwarden rules:
mcp__github__create_issue is mcp:github:create_issue, mcp__github and
mcp__github__* are mcp:github:*. Other entries (Bash(...), Read(...)) are
reported as skipped.

One prompt per call: mcpwarden decides every call and asks you itself for
those its policy says ask, so by default (--client-prompt skip) import lets
mcpwarden's tools through the client's own permission prompt where a file
says so: with --write, Claude Code gets "mcp__mcpwarden" in
permissions.allow of the --settings file (else .claude/settings.local.json
in the project, ~/.claude/settings.json for ~/.claude.json), and OpenCode a
"mcpwarden_*": "allow" permission when its permission would ask; for the
other clients import says what to choose in their prompt.
--client-prompt keep leaves the client's prompt on.

Server names that are not valid mcpwarden server keys are converted (lower
case, other characters to '-') with a note. The report goes to stderr; the
client snippet to stdout.

Exit status: 0 done, 1 error (writing a file), 2 bad usage or input (an
unreadable client config, an existing --out without --force).`,
		Example: `  mcpwarden import ~/Library/Application\ Support/Claude/claude_desktop_config.json
  mcpwarden import --from claude-code --settings .claude/settings.json --write
  mcpwarden import --from vscode --out .vscode/mcpwarden.yaml --write`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runImport(cmd.OutOrStdout(), cmd.ErrOrStderr(), o, args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.from, "from", "", "client format: claude-desktop, claude-code, cursor, vscode, opencode, gemini or codex (default: detected)")
	f.StringVarP(&o.out, "out", "o", "mcpwarden.yaml", "mcpwarden config to write")
	f.StringVar(&o.settings, "settings", "", "Claude Code settings file to convert permissions from (.claude/settings.json)")
	f.StringVar(&o.command, "command", "", "mcpwarden executable for the client entry (default: mcpwarden on PATH, else this binary)")
	f.BoolVar(&o.force, "force", false, "overwrite --out if it exists")
	f.BoolVar(&o.write, "write", false, "rewrite FILE to run mcpwarden, keeping a backup")
	f.BoolVar(&o.secretsIn, "secrets-in-client", false, "with --write: put the literal secrets into the env of the client's mcpwarden entry (the default)")
	f.BoolVar(&o.secretsEnv, "secrets-in-env", false, "keep the literal secrets out of the client file too: set them in the environment mcpwarden runs in")
	f.Var(&o.clientPrompt, "client-prompt", "skip: let mcpwarden's tools through the client's own permission prompt, as mcpwarden decides and asks itself (Claude Code: permissions.allow in --settings or .claude/settings.local.json; OpenCode: its permission); keep: leave it on")
	f.StringSliceVar(&o.workspace, "workspace", nil, "directory the servers on this machine are confined to (repeatable; default: the directories the client's filesystem servers were given, else the project directory)")
	_ = cmd.RegisterFlagCompletionFunc("from", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		var names []string
		for _, f := range clientconfig.Formats() {
			names = append(names, f.String())
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

func usageErr(format string, args ...any) error {
	return &codeError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

func runImport(stdout, stderr io.Writer, o importOptions, args []string) error {
	if o.secretsIn && !o.write {
		return usageErr("--secrets-in-client needs --write: import does not print secrets")
	}
	if o.secretsIn && o.secretsEnv {
		return usageErr("--secrets-in-client and --secrets-in-env contradict each other: choose one")
	}
	switch strings.ToLower(filepath.Ext(o.out)) {
	case ".yaml", ".yml":
	default:
		return usageErr("--out %s: import writes YAML; use a .yaml file name", o.out)
	}
	format := clientconfig.Unknown
	if o.from != "" {
		var err error
		if format, err = clientconfig.ParseFormat(o.from); err != nil {
			if meant := spelling.Closest(o.from, clientNames()); meant != "" {
				err = fmt.Errorf("%w; did you mean --from %s?", err, meant)
			}
			return &codeError{code: exitUsage, err: fmt.Errorf("--from: %w", err)}
		}
	}
	path, err := clientFile(format, args)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && len(args) == 1 {
		return missingClientFile(path, err)
	}
	if err != nil {
		return usageErr("reading client config: %w", err)
	}
	if format == clientconfig.Unknown {
		if format, err = clientconfig.Detect(path, data); err != nil {
			return &codeError{code: exitUsage, err: err}
		}
		fmt.Fprintf(stderr, "reading %s as a %s config (use --from to say otherwise)\n", path, format)
	}
	src, err := clientconfig.Parse(format, data)
	if err != nil {
		return usageErr("%s: %w", path, err)
	}
	if o.settings != "" {
		sd, err := os.ReadFile(o.settings)
		if err != nil {
			return usageErr("reading --settings: %w", err)
		}
		perms, err := clientconfig.ParsePermissions(sd)
		if err != nil {
			return usageErr("%s: %w", o.settings, err)
		}
		src.Permissions.Allow = append(src.Permissions.Allow, perms.Allow...)
		src.Permissions.Ask = append(src.Permissions.Ask, perms.Ask...)
		src.Permissions.Deny = append(src.Permissions.Deny, perms.Deny...)
	}
	absPath, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	home, _ := os.UserHomeDir()
	project, err := projectOf(format, absPath, home)
	if err != nil {
		return err
	}
	var workspace []string
	for _, d := range o.workspace {
		abs, err := filepath.Abs(d)
		if err != nil {
			return usageErr("--workspace %s: %w", d, err)
		}
		workspace = append(workspace, abs)
	}
	res, err := clientconfig.Convert(src, &clientconfig.Options{
		SourceName:   absPath,
		WorkspaceDir: workspaceOf(absPath),
		Home:         home,
		ProjectDir:   project,
		Workspace:    workspace,
	})
	if errors.Is(err, clientconfig.ErrNothingToImport) {
		return usageErr("%s: %w (it may already point at mcpwarden)", path, err)
	}
	if err != nil {
		return usageErr("%s: %w", path, err)
	}

	out, err := filepath.Abs(o.out)
	if err != nil {
		return err
	}
	// The config must load as written; its variables get stand-in values.
	var fakeEnv []string
	for _, v := range res.Vars {
		fakeEnv = append(fakeEnv, v.Name+"=set")
	}
	if _, err := config.Parse(res.Config, ".yaml", filepath.Dir(out), fakeEnv); err != nil {
		return fmt.Errorf("the generated config does not validate (please report this): %w", err)
	}
	if err := writeNew(out, res.Config, o.force); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote %s: %d servers\n", out, len(res.Names))
	if len(res.Workspace) > 0 {
		fmt.Fprintf(stderr, "file access is confined to %s (a filesystem server to its own directories): a path outside is asked about (outside_workspace: %s), whatever the rules allow; change it with --workspace or a server's policy.workspace\n",
			strings.Join(res.Workspace, ", "), clientconfig.OutsideWorkspace)
	}
	// Where the literal secrets go: where the client file held them, the
	// client's entry, which the client passes on whatever environment it
	// was started in (Claude Desktop from the Dock sees no shell's), unless
	// told otherwise.
	inClient := !o.secretsEnv
	envHow := "from the environment, as the client config had it: the client passes its environment on to mcpwarden"
	if format == clientconfig.Codex {
		envHow = "from the environment Codex runs in, as the client config had it: the env_vars of the mcpwarden entry pass it on"
	}
	printImportReport(stderr, res, secretsHow(inClient, o.write), envHow)
	fmt.Fprintf(stderr, "\nnext: mcpwarden tools --offline --config %s shows each server's decision without starting it (no secrets needed); without --offline it starts the servers and lists every tool and its decision\n", out)

	exe, note := mcpwardenCommand(o.command)
	if note != "" {
		fmt.Fprintln(stderr, "note:", note)
	}
	entry := clientconfig.Entry{
		Command: exe,
		Args:    []string{"serve", "--config", out},
		Env:     clientconfig.EntryEnv(res.Vars, inClient && o.write),
		// Gemini CLI's trust: its own confirmation lets mcpwarden's tools through.
		Trusted: o.clientPrompt == clientconfig.PromptSkip,
	}
	if format == clientconfig.Codex {
		entry.PassEnv = clientconfig.PassedVars(res.Vars)
	}
	settings := claudeSettingsFile(o.settings, absPath, project, home)
	if !o.write {
		reportClientPrompt(stderr, format, o, settings)
		snippet, err := clientconfig.Snippet(format, entry)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "\nreplace the MCP servers of %s with this (or run again with --write):\n", path)
		_, err = stdout.Write(snippet)
		return err
	}
	rewritten, err := clientconfig.Rewrite(format, data, entry)
	if err != nil {
		return err
	}
	letThrough := false
	if format == clientconfig.OpenCode && o.clientPrompt == clientconfig.PromptSkip {
		if rewritten, letThrough, err = clientconfig.AllowInOpenCode(rewritten, ""); err != nil {
			return err
		}
	}
	backup, err := backupFile(path, data)
	if err != nil {
		return err
	}
	if err := replaceFile(path, rewritten); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "rewrote %s to run mcpwarden (the original is in %s)\n", path, backup)
	switch {
	case format == clientconfig.ClaudeCode && o.clientPrompt == clientconfig.PromptSkip:
		if err := letThroughClaudeCode(stderr, settings); err != nil {
			return err
		}
	case letThrough:
		fmt.Fprintf(stderr, "one prompt per call: OpenCode's permission now lets mcpwarden's tools through (\"%s_*\": \"allow\"); mcpwarden decides every call and asks you itself. --client-prompt keep leaves OpenCode's prompt on\n", clientconfig.DefaultEntryName)
	case format == clientconfig.OpenCode && o.clientPrompt == clientconfig.PromptSkip:
		fmt.Fprintln(stderr, "one prompt per call: OpenCode's permission does not ask before MCP tools; mcpwarden asks for what its policy says ask")
	default:
		reportClientPrompt(stderr, format, o, settings)
	}
	if format != clientconfig.Codex && clientconfig.HasComments(data) {
		fmt.Fprintf(stderr, "note: the comments of %s are only in the backup\n", path)
	}
	fmt.Fprintln(stderr, "restart the client to pick it up")
	return nil
}

// clientFile is FILE, or the first of the client's usual files that exists.
func clientFile(f clientconfig.Format, args []string) (string, error) {
	if len(args) == 1 {
		return args[0], nil
	}
	if f == clientconfig.Unknown {
		return "", usageErr("give the client config FILE, or --from to read the client's usual file")
	}
	home, _ := os.UserHomeDir()
	candidates := clientconfig.DefaultPaths(f, runtime.GOOS, home, os.Getenv("APPDATA"))
	for _, p := range candidates {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", usageErr("no %s config found (looked in %s); give its path as FILE", f, strings.Join(candidates, ", "))
}

// clientNames are the names --from takes.
func clientNames() []string {
	var names []string
	for _, f := range clientconfig.Formats() {
		names = append(names, f.String())
	}
	return names
}

// missingClientFile is the error for FILE, a client config that does not
// exist (err): a client's name, or one spelt like it, is the --from meant.
func missingClientFile(path string, err error) error {
	meant := spelling.Closest(path, clientNames())
	if slices.Contains(clientNames(), path) {
		meant = path
	}
	if meant != "" {
		return usageErr("client config %s does not exist: to read %s's usual file write mcpwarden import --from %s (%w)", path, meant, meant, err)
	}
	return usageErr("client config %s does not exist: give the client's config file, or --from CLIENT alone to read its usual file (%s) (%w)", path, strings.Join(clientNames(), ", "), err)
}

// projectOf is the project a client file belongs to, which the imported
// servers are confined to when no filesystem server names its own
// directories: the project holding the file, or, for a file of the user's
// rather than of a project (Claude Desktop's, ~/.claude.json,
// ~/.cursor/mcp.json, OpenCode's global file), the directory import runs in.
func projectOf(f clientconfig.Format, path, home string) (string, error) {
	dir := workspaceOf(path)
	user := f == clientconfig.ClaudeDesktop
	if home != "" {
		for _, p := range clientconfig.DefaultPaths(f, runtime.GOOS, home, os.Getenv("APPDATA")) {
			if filepath.IsAbs(p) && filepath.Clean(p) == path {
				user = true
			}
		}
		user = user || dir == filepath.Clean(home)
	}
	if !user {
		return dir, nil
	}
	return os.Getwd()
}

// workspaceOf is what ${workspaceFolder} means for a client file: the
// project holding .vscode/ or .cursor/, else the file's directory.
func workspaceOf(path string) string {
	dir := filepath.Dir(path)
	switch filepath.Base(dir) {
	case ".vscode", ".cursor", ".gemini", ".codex":
		return filepath.Dir(dir)
	}
	return dir
}

// secretsHow says what becomes of a literal secret the client config held.
func secretsHow(inClient, write bool) string {
	switch {
	case inClient && write:
		return "literal secret moved into the env of the client's mcpwarden entry, where the client passes it on; not in the mcpwarden config"
	case inClient:
		return "literal secret, not printed: add it to the env of the mcpwarden entry with the value your client file holds now (--write does it), or set it in the environment mcpwarden runs in"
	}
	return "literal secret found in the client config, not copied (--secrets-in-env): set it in the environment mcpwarden runs in"
}

// printImportReport prints res's notes and variables; secretHow says what
// became of a literal secret, envHow how one from the client's environment
// reaches mcpwarden.
func printImportReport(w io.Writer, res *clientconfig.Result, secretHow, envHow string) {
	for _, n := range res.Notes {
		fmt.Fprintln(w, "note:", n)
	}
	for _, s := range res.Skipped {
		fmt.Fprintln(w, "skipped:", s)
	}
	if len(res.Vars) == 0 {
		return
	}
	fmt.Fprintln(w, "\nmcpwarden needs these environment variables when it starts:")
	for _, v := range res.Vars {
		how := envHow
		switch {
		case v.Unexpanded:
			how = "in args or url, where mcpwarden expands no variables: fix the config by hand, see the note"
		case v.Optional:
			how = "optional: its ${" + v.Name + ":-default} gives the value when it is not set"
		case v.ClientRef != "":
			how = "passed by the client from " + v.ClientRef
		case v.Secret != "":
			how = secretHow
		}
		fmt.Fprintf(w, "  %-28s %s (%s)\n", v.Name, strings.Join(v.Where, ", "), how)
	}
}

// mcpwardenCommand is the executable the client entry runs: --command, else
// mcpwarden on PATH, else this binary unless it is a `go run` build.
func mcpwardenCommand(flag string) (string, string) {
	if flag != "" {
		return flag, ""
	}
	if p, err := exec.LookPath("mcpwarden"); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs, ""
		}
	}
	if exe, err := os.Executable(); err == nil && !strings.HasPrefix(exe, os.TempDir()) && !strings.Contains(exe, "go-build") {
		return exe, ""
	}
	return "mcpwarden", "mcpwarden is not on PATH: install it (go install ./cmd/mcpwarden) or pass --command /path/to/mcpwarden"
}
