package rules

import "strings"

// shellControls are the shell control operators and substitutions with
// which one command value runs more than one command: `;` `&` (and `&&`)
// `|` (and `||`), a backquote, `$(`, redirections `>` `<`, and a line
// break.
var shellControls = [...]string{";", "&", "|", "`", "$(", ">", "<", "\n", "\r"}

// allowCommand reports whether an allow condition whose pattern is pattern
// may match the command s: s holds no shell control syntax that the
// pattern does not hold itself. So `cmd=ls*` covers `ls -la` but not
// `ls; cat /etc/shadow`, while `cmd=make * | tee *` covers that pipeline.
func allowCommand(pattern, s string) bool {
	for _, ctl := range shellControls {
		if strings.Contains(s, ctl) && !strings.Contains(pattern, ctl) {
			return false
		}
	}
	return true
}
