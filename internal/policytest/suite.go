package policytest

import (
	"errors"
	"fmt"
	"time"

	"github.com/mcpwarden/mcpwarden/internal/app"
	"github.com/mcpwarden/mcpwarden/rules"
)

// A Suite is a case file made ready to run against one config: the
// request of every case built and checked against it (its server, its
// profile, its labels), so that what is wrong with a case is said before
// any runs. A Suite is immutable and safe for concurrent use.
type Suite struct {
	file  *File
	setup *app.Setup
	calls []rules.Call // the request of each case of file, in order
}

// NewSuite prepares f's cases to be decided by st. Every case that names a
// server, profile or label the config lacks, or a request mcpwarden does
// not decide, is an error at its place in the file naming what to write
// instead; all of them are returned, joined.
func NewSuite(st *app.Setup, f *File) (*Suite, error) {
	s := &Suite{file: f, setup: st, calls: make([]rules.Call, len(f.Cases))}
	var errs []error
	bad := func(c *Case, key string, err error) {
		at := c.at[key]
		errs = append(errs, fmt.Errorf("%s:%d:%d: case %q: %s: %w", f.Name, at.line, at.col, c.Name, key, err))
	}
	for i := range f.Cases {
		c := &f.Cases[i]
		call, err := app.ParseCall(c.Tool, c.Arguments)
		if err != nil {
			bad(c, "tool", err)
			continue
		}
		if err := st.CheckServer(call.Server); err != nil {
			bad(c, "tool", err)
			continue
		}
		if c.Profile != "" {
			if err := st.CheckProfile(c.Profile); err != nil {
				bad(c, "profile", err)
				continue
			}
		}
		if call.Armed, err = st.Armed(c.After); err != nil {
			bad(c, "after", err)
			continue
		}
		call.Profile, call.Principal, call.Roots = c.Profile, c.Principal, c.Roots
		s.calls[i] = call
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return s, nil
}

// File is the case file the suite runs.
func (s *Suite) File() *File { return s.file }

// A Result is one case decided.
type Result struct {
	Case    *Case
	Call    rules.Call
	Verdict rules.Verdict
	Elapsed time.Duration
}

// Passed reports whether the case got the decision it expects, by the
// rule it names if it names one.
func (r Result) Passed() bool {
	return r.Verdict.Decision == r.Case.Expect && (r.Case.Rule == "" || r.Case.Rule == r.Verdict.Rule)
}

// Decide decides the i-th case as check and the proxy would
// (app.Setup.Decide).
func (s *Suite) Decide(i int) Result {
	start := time.Now()
	c := &s.file.Cases[i]
	call := s.calls[i]
	ex := s.setup.Decide(call, c.OverLimit)
	return Result{Case: c, Call: call, Verdict: ex.Verdict, Elapsed: time.Since(start)}
}
