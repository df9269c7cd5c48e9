package rules

// A PolicySpec is one gate as written in config: the global policy, a
// server's policy or a client profile. The koanf tags are used by the config
// loader. The zero value is a gate with no rules that abstains.
type PolicySpec struct {
	// Default is "", "ask", "deny" or "allow". For the global gate it is the
	// decision when every gate abstains ("" = ask). For a server or profile
	// gate an explicit Default is what the gate contributes when none of its
	// rules matches; "" lets it abstain.
	Default string `koanf:"default"`
	// Deny, Ask and Allow are rule strings (see the package documentation).
	Deny  []string `koanf:"deny"`
	Ask   []string `koanf:"ask"`
	Allow []string `koanf:"allow"`
	// Workspace lists absolute directories that path-like arguments must stay
	// inside; see OutsideWorkspace.
	Workspace []string `koanf:"workspace"`
	// WorkspaceFromRoots adds the calling client's MCP roots to Workspace.
	WorkspaceFromRoots bool `koanf:"workspace_from_roots"`
	// OutsideWorkspace is the decision for a path-like argument outside every
	// workspace directory: "" (= ask), "ask" or "deny".
	OutsideWorkspace string `koanf:"outside_workspace"`
	// AskFallback is "", "deny" or "allow"; it is validated and stored here
	// and used by the ask resolver.
	AskFallback Fallback `koanf:"ask_fallback"`
	// Sampling is "" (= allow), "allow" or "deny": whether the server may
	// ask the client for LLM sampling (sampling/createMessage). It is
	// validated and stored here and enforced by the proxy, for a server's
	// policy.
	Sampling Sampling `koanf:"sampling"`
}

// A Sampling is a server's policy.sampling: whether the server may ask the
// client for LLM sampling.
type Sampling string

// The sampling policies. SamplingDefault (not set) allows, as
// SamplingAllow does.
const (
	SamplingDefault Sampling = ""
	SamplingAllow   Sampling = "allow"
	SamplingDeny    Sampling = "deny"
)

// A ServerSpec is what the rules need to know about one upstream server.
type ServerSpec struct {
	// Policy is the server's own gate, applied together with the global one.
	Policy PolicySpec
	// Root is the absolute directory relative path values are joined to
	// ("" = none: a relative path then never satisfies an allow), the
	// server's working directory for one that mcpwarden starts.
	Root string
	// ExtraRoots are further absolute directories the server may resolve a
	// relative path against: server-filesystem, for one, resolves it against
	// the directory it was given on its command line, not its working
	// directory. A relative value is read once against Root and once against
	// each of them, and the most restrictive verdict stands: a deny or ask
	// holds if any reading matches, an allow only if every one does, and the
	// value is outside the workspace if any reading is. The config layer
	// finds them (the directory arguments of a stdio server); the rules do
	// no I/O.
	ExtraRoots []string
	// Home is the absolute directory the server expands a leading `~` to
	// ("" = unknown: a `~` path then never satisfies an allow).
	Home string
	// Local is set for a server on this machine (one mcpwarden starts):
	// its path-like values may reach mcpwarden's own files, which the
	// built-in self-protection denies (see Spec.Protected).
	Local bool
	// Results is what to do with the server's results that hold a
	// credential (see Spec.Results); "" takes the global value.
	Results string
	// Enforce is the server's enforce setting, which wins over the
	// profile's and the global one (see Policy.Enforcement);
	// EnforceUnset leaves it to them.
	Enforce Enforce
}

// A Spec is the whole rule configuration handed to Compile.
type Spec struct {
	Global   PolicySpec
	Servers  map[string]ServerSpec // key = server name
	Profiles map[string]PolicySpec // key = profile name
	// Enforce is the global enforce setting (EnforceUnset = enforce);
	// ProfileEnforce holds the profiles' (key = profile name, which must be
	// in Profiles), which a server's own setting overrides (see
	// Policy.Enforcement).
	Enforce        Enforce
	ProfileEnforce map[string]Enforce
	// PathKeys are the argument names whose values are paths (nil =
	// DefaultPathKeys()). The last segment of a dotted key is what counts:
	// `options.path` is path-like because `path` is.
	PathKeys []string
	// URLKeys are the argument names whose values are URLs (nil =
	// DefaultURLKeys()): `url.host` and the other parts reach their parsed
	// parts, and a `file:` URI at one is also a path (`@path`).
	URLKeys []string
	// CommandKeys are the argument names whose values are shell commands
	// (nil = DefaultCommandKeys()): an allow condition on one never matches
	// a value with shell control syntax its pattern does not hold.
	CommandKeys []string
	// PathsCaseInsensitive folds case when comparing paths, as on macOS and
	// Windows filesystems: `.ENV` meets `**/.env`. The config layer resolves
	// `auto` to the host's convention; the rules do not look at the host.
	PathsCaseInsensitive bool
	// Protected are mcpwarden's own files and directories (absolute): a
	// path-like value of a Local server's call at or under one is denied
	// by the built-in rule RuleSelfProtection, before any gate and whatever
	// the config says. An entry ending in `*` protects every path that
	// starts with the rest (an audit log's rotations).
	Protected []string
	// ProtectedNames are files protected as Protected is wherever they
	// are: relative paths (`.mcp.json`, `.claude/settings.json`) that
	// protect every path ending with them, and what lies beneath; a call
	// with several paths (a move) may not take a directory the name
	// starts with (`.claude`). The files that route a client through
	// mcpwarden go here.
	ProtectedNames []string
	// Labels name sets of requests by rule patterns (label name → patterns):
	// a request carries a label if any pattern matches it, as a deny rule
	// would. Flow rules refer to them.
	Labels map[string][]string
	// Flow are the flow rules: they escalate a request by what its session
	// has already received (Call.Armed).
	Flow []FlowSpec
	// Limits count requests matching a pattern per window (see LimitSpec).
	Limits []LimitSpec
	// HideSuspiciousTools hides the tools whose description looks aimed
	// at the model (the proxy judges that; see toolscreen.Tool).
	HideSuspiciousTools bool
	// Results is what to do with a result that holds a credential:
	// redact (the default, ""), deny, ask or log (see ResultAction).
	Results string
}

// DefaultPathKeys returns a fresh copy of the argument names treated as paths
// when Spec.PathKeys is nil: the names real MCP servers give path
// arguments. Keys are compared as keyfold does, so `filePath` and
// `FILE_PATH` are `file_path`.
func DefaultPathKeys() []string {
	return []string{
		"path", "paths", "file", "files", "file_path", "file_paths", "filename", "filenames",
		"source", "sources", "source_path", "src", "destination", "dest", "dest_path",
		"destination_path", "target", "target_path", "target_file", "dir", "dirs",
		"directory", "directories", "dir_path", "directory_path", "folder", "folder_path",
		"cwd", "workdir", "working_dir", "working_directory", "root", "root_path",
		"repo_path", "repository_path", "project_path", "project_dir", "output",
		"output_path", "output_file", "output_dir", "input_path", "input_file",
		"old_path", "new_path", "local_path", "abs_path",
		"absolute_path", "relative_path", "notebook_path", "image_path",
	}
}

// DefaultURLKeys returns a fresh copy of the argument names treated as URLs
// when Spec.URLKeys is nil.
func DefaultURLKeys() []string {
	return []string{
		"url", "urls", "uri", "uris", "href", "link", "links", "endpoint", "base_url",
		"baseurl", "api_url", "webhook_url", "callback_url", "redirect_url", "target_url",
		"website", "homepage", "source_url", "download_url", "image_url", "remote_url",
	}
}

// DefaultCommandKeys returns a fresh copy of the argument names treated as
// shell commands when Spec.CommandKeys is nil.
func DefaultCommandKeys() []string {
	return []string{
		"cmd", "command", "commands", "script", "shell", "shell_command", "bash",
		"sh", "exec", "command_line", "cmdline",
	}
}
