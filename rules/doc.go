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
// arguments (`options.path`); arrays are transparent at every step, `[]` may
// be written for clarity. All conditions of a rule must hold.
//
// Values: strings as they are; numbers, booleans and null by their JSON
// text, the same whichever way the arguments were decoded (see scalarText);
// objects never match a pattern and always satisfy `!=`. A deny or ask rule's
// condition holds if any value at the key satisfies it, an allow's only if
// every value does and there is at least one (an empty array never satisfies
// an allow, nor a deny). An absent key satisfies only `!=`.
//
// Path-like keys (Spec.PathKeys; the last segment of the key counts) are
// normalised before matching: a relative value is joined to the server's
// root, then cleaned. A value whose location cannot be known (relative
// without a root, starting with `~`, or a URI) never satisfies an allow; a
// deny or ask condition is tried both on the value cleaned as written and on
// the value rooted at `/`, and holds if either reading satisfies it. Path
// globs treat `/` as a separator with globstar semantics (`**/x` matches `x`),
// and a pattern ending in `/**` also matches the directory itself.
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
// every path-like value outside its directories to outside_workspace, unless
// a matching allow rule has an `=` or `~=` condition on every such value.
package rules
