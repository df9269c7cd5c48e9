package rules

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// A cond is one compiled `key op pattern` condition.
type cond struct {
	key      string   // as written, e.g. `options.path`
	segs     []string // field names, `[]` dropped; for a fact, its key (`@path`)
	fact     fact     // factNone for an argument key
	op       op
	pattern  string // as written
	pat      valuePattern
	pathLike bool // on a path-like key or @path
	urlPart  urlPart
	urlWhole bool // on a URL-like key itself
	command  bool // on a command-like key
}

// holds reports whether the condition holds for the text of one value.
func (c *cond) holds(s string) bool {
	return c.pat.match(s) != (c.op == opNe)
}

// A rule is one compiled rule string.
type rule struct {
	text   string
	where  string // e.g. "servers.fs.policy.deny[2]"
	list   List
	server nameMatcher
	tool   nameMatcher
	conds  []cond
	reason string // the Reason when no argument value needs naming
	// cover lists the distinct keys of the rule's `=` and `~=` conditions on
	// path-like keys: an allow vouches for exactly these paths and overrides
	// outside_workspace for them. coverAll is set by an `=` or `~=`
	// condition on @path, which vouches for every path.
	cover    [][]string
	coverAll bool
}

// matchesName reports whether the rule's server and tool patterns match.
// An allow whose tool is a glob not naming network (`*`, `read_*`) never
// matches network/connect: `allow: mcp:github:*` is written for a server's
// tools, and must not let it connect anywhere. A deny or ask glob does
// cover connections, which only narrows what goes out.
func (r *rule) matchesName(server, tool string) bool {
	if tool == ToolConnect && r.list == ListAllow && !r.tool.literal() && !strings.Contains(r.tool.lit, "network") {
		return false
	}
	return r.server.match(server) && r.tool.match(tool)
}

// A ruleList is one list of a gate, indexed so that a call only looks at the
// rules that can match its server and tool: those with a literal server and
// tool, those with a literal server and a tool glob, and those with a server
// glob. Each index slice is in list order.
type ruleList struct {
	rules     []*rule
	byServer  map[string]*serverRules
	anyServer []int32
}

type serverRules struct {
	byTool  map[string][]int32
	anyTool []int32
}

func (l *ruleList) add(r *rule) {
	i := int32(len(l.rules))
	l.rules = append(l.rules, r)
	if !r.server.literal() {
		l.anyServer = append(l.anyServer, i)
		return
	}
	if l.byServer == nil {
		l.byServer = map[string]*serverRules{}
	}
	sr := l.byServer[r.server.lit]
	if sr == nil {
		sr = &serverRules{byTool: map[string][]int32{}}
		l.byServer[r.server.lit] = sr
	}
	if r.tool.literal() {
		sr.byTool[r.tool.lit] = append(sr.byTool[r.tool.lit], i)
	} else {
		sr.anyTool = append(sr.anyTool, i)
	}
}

// candidates returns the index slices whose rules may match server and tool.
func (l *ruleList) candidates(server, tool string) (exact, anyTool, anyServer []int32) {
	if sr := l.byServer[server]; sr != nil {
		exact, anyTool = sr.byTool[tool], sr.anyTool
	}
	return exact, anyTool, l.anyServer
}

// A gate is one compiled PolicySpec.
type gate struct {
	name        string // "policy", "servers.fs.policy", "profiles.ci"
	server      string // the server of a server gate, else ""
	profile     bool   // a profile gate
	lists       [3]ruleList
	def         Decision
	hasDef      bool
	defReason   string
	confined    bool     // Workspace or WorkspaceFromRoots is set
	workspace   []string // clean absolute directories
	fromRoots   bool
	outside     Decision // Ask or Deny
	askFallback Fallback
}

// A serverEntry is what a Policy keeps per configured server.
type serverEntry struct {
	gate  *gate
	root  string
	extra []string // ServerSpec.ExtraRoots, clean, without Root or repeats
	home  string
	local bool // on this machine: self-protection applies
	// workspace joins the global and the server's workspace: what the
	// proxy hands the server as its MCP roots (see Workspace).
	workspace []string
}

// A Policy is a compiled Spec. It is immutable and safe for concurrent use;
// swap a whole Policy (e.g. through an atomic.Pointer) to reload. A nil
// *Policy denies every call.
type Policy struct {
	global         gate
	globalDefault  Decision
	defaultReason  string
	servers        map[string]serverEntry
	profiles       map[string]*gate
	pathKeys       keySet
	urlKeys        keySet
	cmdKeys        keySet
	foldPaths      bool                    // Spec.PathsCaseInsensitive
	annotations    bool                    // some rule reads a tool annotation (@readOnly …)
	own            ownFiles                // see Spec.Protected and Spec.ProtectedNames
	labels         []label                 // Spec.Labels, by name
	flow           []flowRule              // Spec.Flow, in order
	limits         []Limit                 // Spec.Limits, in order
	results        ResultAction            // Spec.Results
	hideSuspicious bool                    // Spec.HideSuspiciousTools
	serverResults  map[string]ResultAction // ServerSpec.Results, where set
	enforce        enforcement             // Spec.Enforce, ServerSpec.Enforce, Spec.ProfileEnforce
	order          []*gate                 // global, servers by name, profiles by name (for Lint)
	sha            string
}

// Compile validates s and compiles every rule once. All problems are
// reported, joined with errors.Join; each rule problem is a *RuleError that
// names where the rule is (`servers.fs.policy.deny[2]`), the rule text, the
// column and what to do. A nil Spec.PathKeys means DefaultPathKeys().
func Compile(s Spec) (*Policy, error) {
	c := compiler{p: &Policy{
		servers:  map[string]serverEntry{},
		profiles: map[string]*gate{},
	}}
	keys := s.PathKeys
	if keys == nil {
		keys = DefaultPathKeys()
	}
	c.p.pathKeys = c.keySet("path_keys", keys)
	urlKeys := s.URLKeys
	if urlKeys == nil {
		urlKeys = DefaultURLKeys()
	}
	c.p.urlKeys = c.keySet("url_keys", urlKeys)
	cmdKeys := s.CommandKeys
	if cmdKeys == nil {
		cmdKeys = DefaultCommandKeys()
	}
	c.p.cmdKeys = c.keySet("command_keys", cmdKeys)
	c.p.foldPaths = s.PathsCaseInsensitive

	c.gate(&c.p.global, GatePolicy, "policy", s.Global)
	c.p.order = append(c.p.order, &c.p.global)
	c.p.globalDefault = Ask
	if c.p.global.hasDef {
		c.p.globalDefault = c.p.global.def
	}
	c.p.defaultReason = "no rule matched; the default is " + c.p.globalDefault.String()
	c.p.global.hasDef = false // the global Default is the fallback, not a contribution

	for _, name := range slices.Sorted(maps.Keys(s.Servers)) {
		srv := s.Servers[name]
		where := "servers." + name
		if !ValidServerName(name) {
			c.errorf("%s: %q is not a server name (lower-case letters, digits, _ and -, at most 32)", where, name)
		}
		if srv.Root != "" && !filepath.IsAbs(srv.Root) {
			c.errorf("%s.root: %q is not absolute; resolve it before compiling the rules", where, srv.Root)
		}
		if srv.Home != "" && !filepath.IsAbs(srv.Home) {
			c.errorf("%s.home: %q is not absolute; resolve it before compiling the rules", where, srv.Home)
		}
		e := serverEntry{root: cleanOrEmpty(srv.Root), home: cleanOrEmpty(srv.Home), local: srv.Local}
		for i, dir := range srv.ExtraRoots {
			switch dir = cleanOrEmpty(dir); {
			case !filepath.IsAbs(dir):
				c.errorf("%s.extra_roots[%d]: %q is not absolute; resolve it before compiling the rules", where, i, srv.ExtraRoots[i])
			case dir != e.root && !slices.Contains(e.extra, dir):
				e.extra = append(e.extra, dir)
			}
		}
		if !isZero(srv.Policy) {
			e.gate = &gate{server: name}
			c.gate(e.gate, where+".policy", where+".policy", srv.Policy)
			c.p.order = append(c.p.order, e.gate)
		}
		e.workspace = workspaceDirs(&c.p.global, e.gate)
		c.p.servers[name] = e
	}
	c.protected(s.Protected, s.ProtectedNames)
	for _, name := range slices.Sorted(maps.Keys(s.Profiles)) {
		g := &gate{profile: true}
		c.p.order = append(c.p.order, g)
		c.gate(g, "profiles."+name, "profiles."+name, s.Profiles[name])
		c.p.profiles[name] = g
	}
	c.labels(s.Labels, s.Flow)
	c.checkLabelRefs()
	c.resultsSpec(s)
	c.p.hideSuspicious = s.HideSuspiciousTools
	c.limits(s.Limits)
	c.compileEnforce(s)
	if err := errors.Join(c.errs...); err != nil {
		return nil, err
	}
	c.p.sha = specSHA256(s, keys, urlKeys, cmdKeys)
	return c.p, nil
}

// keySet checks and compiles one list of argument names; name is its
// config key.
func (c *compiler) keySet(name string, keys []string) keySet {
	for i, k := range keys {
		if k == "" || strings.ContainsAny(k, ".[]@") {
			c.errorf("%s[%d]: %q is not an argument name (no dots, brackets or @: the last segment of a key is what counts)", name, i, k)
		}
	}
	return newKeySet(keys)
}

type compiler struct {
	p    *Policy
	errs []error
	// labelRefs are the `@label` conditions met, checked against the
	// labels once they are compiled (see checkLabelRefs).
	labelRefs []labelRef
}

func (c *compiler) errorf(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf(format, args...))
}

func (c *compiler) decision(where, s string) Decision {
	d, err := ParseDecision(s)
	if err != nil {
		c.errorf("%s: %w", where, err)
	}
	return d
}

// gate compiles spec into g; name is the gate's name in verdicts and where
// the config prefix of its fields.
func (c *compiler) gate(g *gate, name, where string, spec PolicySpec) {
	g.name = name
	if spec.Default != "" {
		g.def = c.decision(where+".default", spec.Default)
		g.hasDef = true
		g.defReason = "no rule in " + name + " matched; its default is " + g.def.String()
	}
	for k, list := range [3][]string{spec.Deny, spec.Ask, spec.Allow} {
		kind := List(k)
		for i, text := range list {
			at := where + "." + kind.String() + "[" + strconv.Itoa(i) + "]"
			r, err := c.rule(text, kind)
			if err != nil {
				c.errs = append(c.errs, &RuleError{Where: at, Rule: text, Column: column(text, err.off), Msg: err.msg})
				continue
			}
			r.where = at
			g.lists[kind].add(r)
		}
	}
	for i, dir := range spec.Workspace {
		if !filepath.IsAbs(dir) {
			c.errorf("%s.workspace[%d]: %q is not absolute; resolve it before compiling the rules", where, i, dir)
			continue
		}
		g.workspace = append(g.workspace, filepath.Clean(dir))
	}
	g.fromRoots = spec.WorkspaceFromRoots
	g.confined = len(spec.Workspace) > 0 || spec.WorkspaceFromRoots
	switch spec.OutsideWorkspace {
	case "", "ask":
		g.outside = Ask
	case "deny":
		g.outside = Deny
	default:
		c.errorf("%s.outside_workspace: %q is not ask or deny (to allow every path, drop the workspace)", where, spec.OutsideWorkspace)
	}
	switch f := spec.AskFallback; f {
	case FallbackNone, FallbackDeny, FallbackAllow:
		g.askFallback = f
	default:
		c.errorf("%s.ask_fallback: %q is not deny or allow", where, spec.AskFallback)
	}
	switch spec.Sampling {
	case SamplingDefault, SamplingAllow, SamplingDeny:
	default:
		c.errorf("%s.sampling: %q is not allow or deny", where, spec.Sampling)
	}
}

// rule parses and compiles one rule string.
func (c *compiler) rule(text string, kind List) (*rule, *syntaxError) {
	pr, serr := parseRule(text)
	if serr != nil {
		return nil, serr
	}
	r := &rule{text: text, list: kind}
	var err *syntaxError
	if r.server, err = compileName(pr.server); err != nil {
		return nil, err
	}
	if r.tool, err = compileName(pr.tool); err != nil {
		return nil, err
	}
	for _, pc := range pr.conds {
		cd, err := c.cond(pc)
		if err != nil {
			return nil, err
		}
		if msg := checkHostPattern(r, &cd); msg != "" {
			return nil, &syntaxError{pc.pat.off, msg}
		}
		r.conds = append(r.conds, cd)
		if cd.fact == factLabel {
			c.labelRefs = append(c.labelRefs, labelRef{rule: text, pattern: cd.pattern, literal: cd.op != opRe && isLiteral(cd.pattern)})
		}
		if cd.pathLike && cd.fact == factNone && cd.op != opNe && !slices.ContainsFunc(r.cover, func(s []string) bool { return slices.Equal(s, cd.segs) }) {
			r.cover = append(r.cover, cd.segs)
		}
		if cd.fact == factPath && cd.op != opNe {
			r.coverAll = true
		}
	}
	r.reason = kind.String() + " rule " + strconv.Quote(text) + " matched"
	return r, nil
}

func cleanOrEmpty(dir string) string {
	if dir == "" {
		return ""
	}
	return filepath.Clean(dir)
}

func isZero(p PolicySpec) bool {
	return p.Default == "" && len(p.Deny) == 0 && len(p.Ask) == 0 && len(p.Allow) == 0 &&
		len(p.Workspace) == 0 && !p.WorkspaceFromRoots && p.OutsideWorkspace == "" && p.AskFallback == ""
}

// specSHA256 hashes a canonical JSON form of the spec: path keys as used,
// maps in key order (encoding/json sorts them), empty lists as null.
func specSHA256(s Spec, pathKeys, urlKeys, cmdKeys []string) string {
	canon := func(p PolicySpec) PolicySpec {
		for _, l := range []*[]string{&p.Deny, &p.Ask, &p.Allow, &p.Workspace} {
			if len(*l) == 0 {
				*l = nil
			}
		}
		return p
	}
	type server struct {
		Policy     PolicySpec
		Root       string
		ExtraRoots []string `json:",omitempty"`
		Home       string   `json:",omitempty"`
		Results    string   `json:",omitempty"`
		Enforce    Enforce  `json:",omitempty"`
	}
	set := func(keys []string) []string { return slices.Compact(slices.Sorted(slices.Values(keys))) }
	v := struct {
		Version              int
		PathKeys             []string
		URLKeys              []string `json:",omitempty"`
		CommandKeys          []string `json:",omitempty"`
		PathsCaseInsensitive bool     `json:",omitempty"`
		Global               PolicySpec
		Servers              map[string]server
		Profiles             map[string]PolicySpec
		Labels               map[string][]string `json:",omitempty"`
		Flow                 []FlowSpec          `json:",omitempty"`
		Results              string              `json:",omitempty"`
		Limits               []LimitSpec         `json:",omitempty"`
		HideSuspiciousTools  bool                `json:",omitempty"`
		Enforce              Enforce             `json:",omitempty"`
		ProfileEnforce       map[string]Enforce  `json:",omitempty"`
	}{Enforce: s.Enforce, ProfileEnforce: s.ProfileEnforce, HideSuspiciousTools: s.HideSuspiciousTools, Labels: s.Labels, Flow: s.Flow, Results: s.Results, Limits: s.Limits, Version: 2, PathKeys: set(pathKeys), URLKeys: set(urlKeys), CommandKeys: set(cmdKeys), PathsCaseInsensitive: s.PathsCaseInsensitive, Global: canon(s.Global)}
	for name, srv := range s.Servers {
		if v.Servers == nil {
			v.Servers = map[string]server{}
		}
		v.Servers[name] = server{canon(srv.Policy), srv.Root, srv.ExtraRoots, srv.Home, srv.Results, srv.Enforce}
	}
	for name, p := range s.Profiles {
		if v.Profiles == nil {
			v.Profiles = map[string]PolicySpec{}
		}
		v.Profiles[name] = canon(p)
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic("rules: marshalling a spec: " + err.Error()) // only strings, bools, maps and slices
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
