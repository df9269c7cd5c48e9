package rules

import (
	"slices"
	"strings"
)

// contentKinds are the requests other than tools/call that bring a
// server's text to the model: a label that arms on what a server returns
// must cover them as well as its tools.
var contentKinds = []string{"prompts/get", "resources/read"}

// lintLabels reports, for Lint, a label pattern that matches no known tool
// (a typo there silently stops a flow rule from arming or applying), a
// pattern with a condition on a path-like key a matching tool does not
// take while it takes another, a label that a flow rule arms from and that
// covers a server's tools but not its prompts or resources
// (missedContent), and a label no flow rule uses.
func (p *Policy) lintLabels(tools []ToolInfo) []Finding {
	var fs []Finding
	for i := range p.labels {
		l := &p.labels[i]
		var covered []ToolInfo
		for _, r := range l.g.lists[ListDeny].rules {
			known := knownTools(&l.g, r, tools)
			covered = append(covered, known...)
			if len(known) == 0 {
				fs = append(fs, Finding{Where: r.where, Rule: r.text, Message: "matches no known tool, so it never gives a request the label " + l.name})
			}
			for _, m := range p.missingPathConds(r, known) {
				fs = append(fs, Finding{Where: r.where, Rule: r.text, Message: m})
			}
		}
		used, arms := false, false
		for _, f := range p.flow {
			used = used || f.after == i || f.on == i
			arms = arms || f.after == i
		}
		if arms {
			fs = append(fs, missedContent(l, covered, tools)...)
		}
		if !used {
			fs = append(fs, Finding{Where: l.g.name, Message: "no flow rule uses the label " + l.name})
		}
	}
	return fs
}

// missedContent reports, for a label l that a flow rule arms from, each
// server with a tool that l covers (covered) and a prompts/get or
// resources/read among tools that l does not cover: that server's prompt
// or resource brings its text with no label armed.
func missedContent(l *label, covered, tools []ToolInfo) []Finding {
	var servers []string
	for _, t := range covered {
		if !strings.Contains(t.Name, "/") && !slices.Contains(servers, t.Server) {
			servers = append(servers, t.Server)
		}
	}
	var fs []Finding
	for _, server := range servers {
		var missed []string
		for _, kind := range contentKinds {
			is := func(t ToolInfo) bool { return t.Server == server && t.Name == kind }
			if slices.ContainsFunc(tools, is) && !slices.ContainsFunc(covered, is) {
				missed = append(missed, Canonical(server, kind))
			}
		}
		if len(missed) == 0 {
			continue
		}
		i := slices.IndexFunc(covered, func(t ToolInfo) bool { return t.Server == server && !strings.Contains(t.Name, "/") })
		fs = append(fs, Finding{Where: l.g.name, Message: "gives the label to " + Canonical(server, covered[i].Name) + " but not to " + strings.Join(missed, ", ") +
			", which bring " + server + "'s text too; write " + quote(Canonical(server, "*")) + " to label every request of " + server})
	}
	return fs
}
