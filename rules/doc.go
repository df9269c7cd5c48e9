// Package rules parses, compiles and evaluates mcpwarden's permission rules.
// It imports no MCP SDK, does no I/O, reads no clock and keeps no global
// state: Compile turns a Spec into an immutable *Policy, safe for concurrent
// use, and Policy.Decide evaluates one call.
//
// A rule is
//
//	mcp:<server glob>:<tool glob>{:<key><op><pattern>}
//
// with op `=` (glob), `!=` (negated glob) or `~=` (RE2 regexp, anchored at
// both ends, `.` matching newlines). The rule is split only at a `:` followed
// by `key=`, `key!=` or `key~=`, so patterns may hold colons
// (`url=https://*`); write `\:` to keep such text in a pattern. In the tool
// part an unescaped colon that starts no condition is a load error, as is any
// invalid glob or regexp and a literal server part that is not a valid server
// name: a typo never silently disables a rule. A key is a dotted path into the
// arguments (`options.path`), or a fact (`@path`); arrays are transparent at
// every step, `[]` may be written for clarity. All conditions of a rule must
// hold.
//
// Keys are matched as a server reads them: the exact key first, else the one
// key at that level equal under keyfold's folding (a Go server binds
// `{"PATH": …}` and `{"ſource": …}` to its fields path and source). The
// proxy refuses arguments with two such keys at one level (jsonargs), so at
// most one can match.
//
// Values: strings as they are; numbers, booleans and null by their JSON
// text, the same whichever way the arguments were decoded, with -0 read as 0
// (see scalarText); objects never match a pattern and always satisfy `!=`. A
// deny or ask rule's condition holds if any value at the key satisfies it,
// an allow's only if every value does and there is at least one. An absent
// key, and an empty array, satisfy only `!=`.
//
// Path-like keys (Spec.PathKeys, a list of the names real servers use; the
// last segment of the key counts) hold paths, and each path is decided in
// every form the upstream may read it in, each form a value of its own (so a
// deny holds if any form matches, an allow only if every form does): the
// lexical form (cleaned; a relative value joined to the server's root and to
// each of its ServerSpec.ExtraRoots, the directories a server such as
// server-filesystem resolves relative paths against, and to each of the MCP
// roots handed to it, Call.UpstreamRoots, one reading each); its NFC form (`é`
// decomposed, the KELVIN SIGN for K); the decoded path of a `file:` URI, and
// the URI read as a relative path; `~` and `~/…` joined to the server's home,
// and read as a relative path; and, when the proxy resolved them on disk
// (Call.Physical, see PathForms), the physical forms, symlinks followed as the
// kernel follows them. A reading whose location cannot be known (a relative
// path without a root, `~` without a home, `~user`, another URI, and a path
// in the server's view: `/proc/self`, `/proc/thread-self`, `/proc/net`,
// `/dev/fd`, `/dev/std*`, `/proc/<pid>`, which name the process that opens
// them) never satisfies an allow; a deny or ask is tried on guesses (the
// value cleaned, and rooted at `/`; for the server's view, the tail after
// its `cwd`, `root` or `fd/<n>` link under any directory and under the
// root, with `..` taken as the kernel takes it, and the physical form the
// proxy resolved as that process). With Spec.PathsCaseInsensitive paths compare case-folded
// (`.ENV` meets `**/.env`). Path globs treat `/` as a separator with globstar
// semantics (`**/x` matches `x`), and a pattern ending in `/**` also matches
// the directory itself. A glob on a path-like key must be able to match an
// absolute path: it starts with `/`, `**` or `{`, or it is a load error that
// suggests the fix (`path=.env` → `**/.env`).
//
// Facts are what the proxy knows that is not an argument. `@path` is every
// path-like value of the call at any depth (under path-like keys, in arrays
// and nested objects, and `file:` URIs under URL-like keys) as one
// multi-valued key: `mcp:*:*:@path=**/.env` also denies
// `read_multiple_files {"paths": [".env"]}`. `@readOnly`, `@destructive`,
// `@idempotent` and `@openWorld` read Call.Facts, the tool's annotations,
// which the proxy sets only for a pinned definition (else they are absent);
// `@principal` and `@profile` read the call's principal and profile. An
// unknown fact is a load error.
//
// URL-like keys (Spec.URLKeys): `url.scheme`, `url.host`, `url.port`,
// `url.path` and `url.query` read the parsed parts, the host normalised
// (lower case, no trailing dot, IDNA to ASCII, userinfo dropped, every IPv4
// spelling as a dotted quad). A value that does not parse never satisfies
// an allow on a part and satisfies every deny and ask on one. A pattern on
// the whole value is also matched against the URL re-assembled from its
// normalised parts, so `url=*://169.254.169.254*` holds against
// `https://2852039166/`.
//
// Command-like keys (Spec.CommandKeys): an allow condition covers one simple
// command; it never matches a value holding shell control syntax (`;` `&`
// `|` backquote `$(` `>` `<` a line break) that its pattern does not hold.
//
// Gates: the global policy, the server's policy and the profile's policy.
// Within a gate the precedence is deny, outside_workspace=deny, ask,
// outside_workspace=ask, allow, whatever the order of rules; the first
// matching rule of the deciding list is named. A gate contributes its most
// restrictive match, or its explicit Default if nothing matched, or abstains.
// The global Default is not a contribution but the fallback when the global
// and server gates both abstain ("" = ask), so that a server policy's allow
// works under a global `default: deny`. The profile gate is applied last and
// can only make the decision more restrictive. A workspace-confined gate sends
// every path-like value any form of which is outside its directories, or
// whose location is unknown, to outside_workspace, unless a matching allow
// rule has an `=` or `~=` condition on every such value (or on `@path`).
package rules
