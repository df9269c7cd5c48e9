package sandbox

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/mcpwarden/mcpwarden/internal/enumtext"
)

// SelfTestArg is the first argument of the self-test's command line: the
// hidden subcommand that calls [SelfTestMain]. [Doctor] runs it, through
// the launcher, in each tier.
const SelfTestArg = "__sandbox-selftest"

// An Attempt is one forbidden action of the self-test. The zero Attempt
// is none; its text is refused.
type Attempt uint8

// The attempts, in the order the self-test makes them, with their names in
// the comments.
const (
	AttemptReadHome      Attempt = iota + 1 // "read_home_secret"
	AttemptWriteOutside                     // "write_outside"
	AttemptExecDropped                      // "exec_dropped_file"
	AttemptExecMemfd                        // "exec_memfd"
	AttemptTCPConnect                       // "tcp_connect_loopback"
	AttemptUDPSend                          // "udp_send"
	AttemptRawSocket                        // "raw_socket"
	AttemptSignalParent                     // "signal_mcpwarden"
	AttemptTIOCSTI                          // "tiocsti"
	AttemptParentEnviron                    // "read_mcpwarden_environ"
	AttemptFindVariable                     // "find_mcpwarden_variable"
)

// Attempts are every attempt, in order.
var Attempts = []Attempt{
	AttemptReadHome, AttemptWriteOutside, AttemptExecDropped, AttemptExecMemfd, AttemptTCPConnect, AttemptUDPSend,
	AttemptRawSocket, AttemptSignalParent, AttemptTIOCSTI, AttemptParentEnviron, AttemptFindVariable,
}

var attemptNames = enumtext.Names[Attempt]{
	AttemptReadHome: "read_home_secret", AttemptWriteOutside: "write_outside", AttemptExecDropped: "exec_dropped_file",
	AttemptExecMemfd: "exec_memfd", AttemptTCPConnect: "tcp_connect_loopback", AttemptUDPSend: "udp_send",
	AttemptRawSocket: "raw_socket", AttemptSignalParent: "signal_mcpwarden", AttemptTIOCSTI: "tiocsti",
	AttemptParentEnviron: "read_mcpwarden_environ", AttemptFindVariable: "find_mcpwarden_variable",
}

var attemptTitles = [...]string{
	AttemptReadHome:      "read a key planted in the real home",
	AttemptWriteOutside:  "write a file outside the sandbox",
	AttemptExecDropped:   "execute a file it wrote",
	AttemptExecMemfd:     "execute a binary it wrote to a memory file",
	AttemptTCPConnect:    "connect to a loopback TCP listener",
	AttemptUDPSend:       "send a UDP datagram",
	AttemptRawSocket:     "open a raw socket",
	AttemptSignalParent:  "signal mcpwarden",
	AttemptTIOCSTI:       "type into the terminal (TIOCSTI)",
	AttemptParentEnviron: "read /proc/<mcpwarden>/environ",
	AttemptFindVariable:  "find an MCPWARDEN_* variable",
}

// Title is what the attempt tries, in words.
func (a Attempt) Title() string {
	if a != 0 && int(a) < len(attemptTitles) {
		return attemptTitles[a]
	}
	return a.String()
}

// String returns the attempt's name, or "Attempt(N)" for an invalid one.
func (a Attempt) String() string { return attemptNames.String(a, "Attempt") }

// MarshalText returns the attempt's name; an invalid attempt is an error.
func (a Attempt) MarshalText() ([]byte, error) {
	if a == 0 {
		return nil, errors.New("invalid self-test attempt 0")
	}
	return attemptNames.Marshal(a, "self-test attempt")
}

// UnmarshalText reads an attempt's name; anything else is an error.
func (a *Attempt) UnmarshalText(b []byte) error {
	if !attemptNames.Set(a, string(b)) || *a == 0 {
		*a = 0
		return fmt.Errorf("unknown self-test attempt %q", b)
	}
	return nil
}

// An Outcome is what became of an attempt in a tier. The zero value is
// NotBlocked, so that a result whose outcome was never set fails the
// checkup.
type Outcome uint8

// The outcomes, with their texts in the comments. NotApplicable is an
// attempt that fails without the sandbox too (no controlling terminal, no
// privilege for a raw socket), so its failure inside proves nothing.
const (
	NotBlocked    Outcome = iota // "NOT BLOCKED"
	Blocked                      // "blocked"
	NotApplicable                // "not applicable"
)

var outcomeNames = enumtext.Names[Outcome]{NotBlocked: "NOT BLOCKED", Blocked: "blocked", NotApplicable: "not applicable"}

// String returns the outcome's text, or "Outcome(N)" for an invalid one.
func (o Outcome) String() string { return outcomeNames.String(o, "Outcome") }

// MarshalText returns the outcome's text; an invalid outcome is an error.
func (o Outcome) MarshalText() ([]byte, error) { return outcomeNames.Marshal(o, "self-test outcome") }

// UnmarshalText reads an outcome's text; anything else is an error and
// leaves NotBlocked.
func (o *Outcome) UnmarshalText(b []byte) error {
	if !outcomeNames.Set(o, string(b)) {
		return fmt.Errorf("unknown self-test outcome %q", b)
	}
	return nil
}

// A Result is one attempt in one tier.
type Result struct {
	Attempt Attempt `json:"attempt"`
	Outcome Outcome `json:"outcome"`
	// Detail is the error that stopped it, or what it got.
	Detail string `json:"detail"`
}

// A TierCheck is the self-test in one tier.
type TierCheck struct {
	Tier Tier `json:"tier"`
	// Skipped says why the tier was not tried (the kernel lacks it).
	Skipped string `json:"skipped,omitempty"`
	// Error says why the self-test did not run or did not finish.
	Error string `json:"error,omitempty"`
	// Report is what the launcher applied.
	Report  *Report  `json:"report,omitempty"`
	Results []Result `json:"results,omitempty"`
}

// ok is whether the tier ran, applied all it should and blocked every
// attempt that escapes without the sandbox.
func (c TierCheck) ok() bool {
	if c.Skipped != "" {
		return true
	}
	if c.Error != "" || c.Report == nil || len(c.Report.Missing) > 0 || len(c.Results) != len(Attempts) {
		return false
	}
	for _, r := range c.Results {
		if r.Outcome == NotBlocked {
			return false
		}
	}
	return true
}

// A Checkup is what [Doctor] found: the kernel's support and the
// self-test in each tier.
type Checkup struct {
	Support Support     `json:"support"`
	Auto    Tier        `json:"auto_tier"`
	Tiers   []TierCheck `json:"tiers"`
	// OK is true when every tier tried confined everything it should and
	// blocked every attempt; doctor exits non-zero otherwise.
	OK bool `json:"ok"`
}

func (c *Checkup) settle() {
	ran := false
	c.OK = true
	for _, t := range c.Tiers {
		if t.Skipped == "" {
			ran = true
		}
		if !t.ok() {
			c.OK = false
		}
	}
	if !ran {
		c.OK = false
	}
}

// WriteText writes the checkup for a person to read.
func (c Checkup) WriteText(w io.Writer) error {
	var b strings.Builder
	yes := func(ok bool) string {
		if ok {
			return "yes"
		}
		return "no"
	}
	fmt.Fprintf(&b, "kernel: user namespaces %s, Landlock ABI %d, seccomp %s; tier auto is %s\n",
		yes(c.Support.UserNamespaces), c.Support.LandlockABI, yes(c.Support.Seccomp), c.Auto)
	for _, f := range sortedFeatures(c.Support.Missing) {
		fmt.Fprintf(&b, "  missing %s: %s\n", f, c.Support.Missing[f])
	}
	for _, t := range c.Tiers {
		fmt.Fprintf(&b, "\ntier %s: ", t.Tier)
		switch {
		case t.Skipped != "":
			fmt.Fprintf(&b, "not available (%s)\n", t.Skipped)
			continue
		case t.Report != nil:
			fmt.Fprintf(&b, "Landlock ABI %d, applied %s\n", t.Report.LandlockABI, joinConfinements(t.Report.Applied))
			for _, m := range t.Report.Missing {
				fmt.Fprintf(&b, "  NOT APPLIED %s: %s\n", m.Confinement, m.Reason)
			}
		default:
			b.WriteString("the sandbox did not run\n")
		}
		if t.Error != "" {
			fmt.Fprintf(&b, "  error: %s\n", t.Error)
		}
		for _, r := range t.Results {
			fmt.Fprintf(&b, "  %-14s %-36s %s\n", r.Outcome, r.Attempt.Title(), r.Detail)
		}
	}
	if c.OK {
		b.WriteString("\nok: the sandbox runs and blocked every attempt in every available tier\n")
	} else {
		b.WriteString("\nFAILED: the sandbox cannot run as configured, or let an attempt through (see above)\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func joinConfinements(cs []Confinement) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = c.String()
	}
	return strings.Join(s, ", ")
}

func sortedFeatures(m map[Feature]string) []Feature {
	var fs []Feature
	for f := range Feature(len(featureNames)) {
		if _, ok := m[f]; ok {
			fs = append(fs, f)
		}
	}
	return fs
}

// selfTestArgs are what the self-test is told, as JSON on its command
// line: where the planted things are.
type selfTestArgs struct {
	Secret    string `json:"secret"`     // a file in the real home
	Outside   string `json:"outside"`    // a directory outside the sandbox
	TCP       string `json:"tcp"`        // a loopback TCP listener
	UDP       string `json:"udp"`        // a loopback UDP address
	Parent    int    `json:"parent"`     // mcpwarden's (doctor's) PID
	Variable  string `json:"variable"`   // the planted variable's name
	DropDir   string `json:"drop_dir"`   // where to drop the file to execute
	TimeoutMS int    `json:"timeout_ms"` // per network attempt
}
