package rules

// lintLabels reports, for Lint, a label pattern that matches no known tool
// (a typo there silently stops a flow rule from arming or applying), a
// pattern with a condition on a path-like key a matching tool does not
// take while it takes another, and a label no flow rule uses.
func (p *Policy) lintLabels(tools []ToolInfo) []Finding {
	var fs []Finding
	for i := range p.labels {
		l := &p.labels[i]
		for _, r := range l.g.lists[listDeny].rules {
			known := knownTools(&l.g, r, tools)
			if len(known) == 0 {
				fs = append(fs, Finding{Where: r.where, Rule: r.text, Message: "matches no known tool, so it never gives a request the label " + l.name})
			}
			for _, m := range p.missingPathConds(r, known) {
				fs = append(fs, Finding{Where: r.where, Rule: r.text, Message: m})
			}
		}
		used := false
		for _, f := range p.flow {
			used = used || f.after == i || f.on == i
		}
		if !used {
			fs = append(fs, Finding{Where: l.g.name, Message: "no flow rule uses the label " + l.name})
		}
	}
	return fs
}
