package policytest

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/mcpwarden/mcpwarden/rules"
)

// Options say which cases run and how they are reported. The zero value
// runs every case and reports as go test does without -v.
type Options struct {
	// Run selects the cases whose name it matches; nil selects all.
	Run *regexp.Regexp
	// Verbose reports every case, passed or not (go test -v).
	Verbose bool
	// JSON reports as go test -json: one event a line (see Event).
	JSON bool
	// Now is the clock of the events' Time; nil is time.Now.
	Now func() time.Time
}

// An Action is what an Event reports, named as go test -json names it.
type Action string

// The actions of a report's events.
const (
	ActionStart  Action = "start"  // a case file starts
	ActionRun    Action = "run"    // a case starts
	ActionOutput Action = "output" // a line of the text report
	ActionPass   Action = "pass"   // a case, or a whole file, passed
	ActionFail   Action = "fail"   // a case, or a file with a case, failed
)

// An Event is one line of the JSON report, as go test -json (test2json)
// writes them: Package is the case file and Test the case's name. A
// case's pass or fail event also carries the decision it wanted and got,
// the rule that decided, and where the case is written.
type Event struct {
	Time    time.Time `json:"Time"`
	Action  Action    `json:"Action"`
	Package string    `json:"Package"`
	Test    string    `json:"Test,omitempty"`
	Elapsed *float64  `json:"Elapsed,omitempty"` // seconds, on pass and fail
	Output  string    `json:"Output,omitempty"`
	// Want and WantRule are what the case expects; Got and Rule what
	// was decided; Line is where the case is written.
	Want     string `json:"Want,omitempty"`
	WantRule string `json:"WantRule,omitempty"`
	Got      string `json:"Got,omitempty"`
	Rule     string `json:"Rule,omitempty"`
	Line     int    `json:"Line,omitempty"`
}

// Run decides the cases of every suite that opts select and writes the
// report to w: for each case that fails, what it wanted and what it got
// and why; for each file, "ok" or "FAIL" and its count of cases; and a
// last "FAIL" line if any failed. It reports whether every case passed;
// the error is w's.
func Run(w io.Writer, suites []*Suite, opts Options) (bool, error) {
	r := &reporter{w: w, opts: opts}
	if r.opts.Now == nil {
		r.opts.Now = time.Now
	}
	allPassed := true
	for _, s := range suites {
		if !r.suite(s) {
			allPassed = false
		}
	}
	if !allPassed && !opts.JSON {
		r.printf("FAIL\n")
	}
	return allPassed, r.err
}

// A reporter writes one run's report, keeping the first write error.
type reporter struct {
	w    io.Writer
	opts Options
	err  error
}

// suite runs s and reports it; it returns whether every case passed.
func (r *reporter) suite(s *Suite) bool {
	name := s.file.Name
	start := time.Now()
	r.event(Event{Action: ActionStart, Package: name})
	ran, failed := 0, 0
	for i := range s.file.Cases {
		c := &s.file.Cases[i]
		if r.opts.Run != nil && !r.opts.Run.MatchString(c.Name) {
			continue
		}
		ran++
		r.event(Event{Action: ActionRun, Package: name, Test: c.Name})
		if r.opts.Verbose || r.opts.JSON {
			r.output(name, c.Name, "=== RUN   %s\n", c.Name)
		}
		res := s.Decide(i)
		action := ActionPass
		if !res.Passed() {
			action = ActionFail
			failed++
		}
		if !res.Passed() || r.opts.Verbose || r.opts.JSON {
			r.output(name, c.Name, "--- %s: %s (%s:%d)\n", strings.ToUpper(string(action)), c.Name, name, c.Line)
			r.details(name, res)
		}
		r.event(Event{Action: action, Package: name, Test: c.Name, Elapsed: seconds(res.Elapsed),
			Want: c.Expect.String(), WantRule: c.Rule, Got: res.Verdict.Decision.String(), Rule: res.Verdict.Rule, Line: c.Line})
	}
	summary := fmt.Sprintf("%d cases", ran)
	if ran == 1 {
		summary = "1 case"
	}
	switch {
	case failed > 0:
		r.output(name, "", "FAIL\t%s\t%s, %d failed\n", name, summary, failed)
	case ran == 0:
		r.output(name, "", "ok  \t%s\t%s [no cases to run]\n", name, summary)
	default:
		r.output(name, "", "ok  \t%s\t%s\n", name, summary)
	}
	action := ActionPass
	if failed > 0 {
		action = ActionFail
	}
	r.event(Event{Action: action, Package: name, Elapsed: seconds(time.Since(start))})
	return failed == 0
}

// details writes what a case decided: the request, what it wanted and
// what it got, by which rule and why.
func (r *reporter) details(file string, res Result) {
	c, v := res.Case, res.Verdict
	args, _ := json.Marshal(res.Call.Arguments)
	over := ""
	if c.OverLimit {
		over = "true"
	}
	wanted := ""
	if !res.Passed() {
		wanted = want(c)
	}
	for _, kv := range [][2]string{
		{"request", c.Tool + " " + string(args)}, {"profile", c.Profile}, {"principal", c.Principal},
		{"after", strings.Join(c.After, ", ")}, {"roots", strings.Join(c.Roots, ", ")}, {"over_limit", over},
		{"want", wanted}, {"got", got(v)}, {"in", v.Gate}, {"because", v.Reason},
	} {
		if kv[1] != "" {
			r.output(file, c.Name, "    %-11s %s\n", kv[0]+":", kv[1])
		}
	}
}

// want is what c expects: "allow", or "allow by mcp:fs:read_*".
func want(c *Case) string {
	if c.Rule != "" {
		return c.Expect.String() + " by " + c.Rule
	}
	return c.Expect.String()
}

// got is what was decided: "deny by mcp:fs:write_file".
func got(v rules.Verdict) string {
	if v.Rule != "" {
		return v.Decision.String() + " by " + v.Rule
	}
	return v.Decision.String()
}

// output writes one line of the report: as text, or as an output event.
func (r *reporter) output(file, test, format string, args ...any) {
	text := fmt.Sprintf(format, args...)
	if r.opts.JSON {
		r.event(Event{Action: ActionOutput, Package: file, Test: test, Output: text})
		return
	}
	r.printf("%s", text)
}

// event writes e as one line of JSON, if the report is JSON.
func (r *reporter) event(e Event) {
	if !r.opts.JSON || r.err != nil {
		return
	}
	e.Time = r.opts.Now()
	b, err := json.Marshal(e)
	if err != nil {
		r.err = err
		return
	}
	r.printf("%s\n", b)
}

func (r *reporter) printf(format string, args ...any) {
	if r.err == nil {
		_, r.err = fmt.Fprintf(r.w, format, args...)
	}
}

// seconds is d in seconds to the millisecond, as an event's Elapsed.
func seconds(d time.Duration) *float64 {
	s := math.Round(d.Seconds()*1000) / 1000
	return &s
}
