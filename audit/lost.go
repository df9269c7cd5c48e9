package audit

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// lostEvents counts the events a Log could not write since the last line it
// did write. It is guarded by the Log's mutex.
type lostEvents struct {
	count       int64
	byKind      [len(kindNames)]int64
	first, last time.Time
	reason      string // the first failure
}

// add counts one event of kind k lost at t because of err.
func (c *lostEvents) add(k Kind, t time.Time, err error) {
	if c.count == 0 {
		c.first, c.reason = t, err.Error()
	}
	c.count++
	c.last = t
	if k.valid() {
		c.byKind[k]++
	}
}

// event returns the KindLost event that records c.
func (c *lostEvents) event(now time.Time) Event {
	var kinds []string
	for k, n := range c.byKind {
		if n > 0 {
			kinds = append(kinds, fmt.Sprintf("%d %s", n, Kind(k)))
		}
	}
	return Event{
		Time:  now,
		Event: KindLost,
		Lost:  c.count,
		Error: c.reason,
		Detail: fmt.Sprintf("%d events not written from %s to %s (%s)",
			c.count, c.first.UTC().Format(time.RFC3339Nano), c.last.UTC().Format(time.RFC3339Nano), strings.Join(kinds, ", ")),
	}
}

// writeLost writes the KindLost event for the events lost so far, if any,
// and resets the count once it is stored. l.mu must be held.
func (l *Log) writeLost(ctx context.Context) error {
	if l.lost.count == 0 {
		return nil
	}
	e := l.lost.event(l.now())
	e.Error = l.red.String(e.Error)
	buf, err := l.encode(e)
	if err != nil {
		return err
	}
	defer l.putBuf(buf)
	if err := l.writeLine(ctx, buf); err != nil {
		return err
	}
	l.lost = lostEvents{}
	return nil
}
