// Package gcpace paces the garbage collector of a busy process with a
// small heap: while it allocates fast, the collector is given room to run
// less often; while it is idle, the runtime's own pacing is left alone.
//
// The runtime's default (GOGC=100) starts a cycle each time the heap has
// grown by as much as was live after the last one. A proxy keeps only a
// few MiB live, and under load allocates a hundred MiB a second or more
// (each call's request, answer and audit lines), so the collector runs
// dozens of times a second: in the HTTP profile at 16 clients collecting
// was about a tenth of the CPU. Letting the heap grow by a fixed
// headroom between cycles while allocation is that fast trades that much
// memory (capped by a memory limit at twice it) for most of that CPU; once
// allocation slows the default comes back, so an idle process does not
// keep the headroom's garbage.
package gcpace

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// DefaultHeadroom is the heap growth allowed between cycles while busy.
const DefaultHeadroom = 16 << 20

// busyCycles is how many cycles a second the default pacing would have to
// run for the process to count as busy: below it the collector's cost
// (about 3 ms of CPU a cycle with a few MiB live, as GODEBUG=gctrace=1
// showed mcpwarden under the bench's load; so under 3 % of a core) is not
// worth memory.
const busyCycles = 10

// minLive is the least live heap the pacing is worked out for, so that a
// nearly empty heap does not ask for an absurd percentage.
const minLive = 1 << 20

// noLimit is the runtime's memory limit when none is set.
const noLimit = math.MaxInt64

// A Pacer sets the collector's percentage (what GOGC sets) and memory
// limit (what GOMEMLIMIT sets) after each cycle. The zero value does
// nothing; Start makes one that works.
type Pacer struct {
	headroom uint64
	defaults int // the percentage in force when it started, restored by Stop

	mu       sync.Mutex
	stopped  bool
	set      setting   // what it set last
	lastAt   time.Time // when the last cycle it saw ended
	lastSeen uint64    // the bytes allocated in all, as of then
	samples  []metrics.Sample
}

// A setting is the percentage and memory limit set for the collector.
type setting struct {
	percent int
	limit   int64
}

// The runtime's figures a Pacer reads, in the order of Pacer.samples.
var figureNames = []string{
	"/gc/heap/live:bytes",
	"/gc/heap/allocs:bytes",
	"/memory/classes/total:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/free:bytes",
}

// Start paces the collector with headroom bytes (DefaultHeadroom if 0)
// while the process is busy, until Stop. It leaves the collector alone,
// and returns a Pacer that does nothing, when the GOGC or GOMEMLIMIT
// environment variable is set, or a memory limit is (whoever set them
// chose the pacing), or the collector is off.
func Start(headroom uint64, getenv func(string) string) *Pacer {
	defaults, limit := current()
	if getenv("GOGC") != "" || getenv("GOMEMLIMIT") != "" || limit != noLimit || defaults <= 0 {
		return &Pacer{stopped: true}
	}
	if headroom == 0 {
		headroom = DefaultHeadroom
	}
	p := &Pacer{headroom: headroom, defaults: defaults, set: setting{defaults, noLimit}}
	for _, name := range figureNames {
		p.samples = append(p.samples, metrics.Sample{Name: name})
	}
	p.lastAt = time.Now()
	p.lastSeen, _, _ = p.read()
	p.arm()
	return p
}

// Stop ends the pacing and restores the percentage in force when it
// started, with no memory limit. It is safe to call more than once, and
// on a zero Pacer.
func (p *Pacer) Stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped || p.headroom == 0 { // stopped, or never started
		return
	}
	p.stopped = true
	p.apply(setting{p.defaults, noLimit})
}

// A sentinel is what a cycle collects to tell the Pacer it ended: an
// object with a pointer, so the allocator does not batch it with others
// (see runtime.AddCleanup).
type sentinel struct{ _ *sentinel }

// arm has a coming cycle call cycle. The runtime runs it once the
// sentinel's span is swept, some time after the cycle that found it
// unreachable and at the latest as the next one starts.
func (p *Pacer) arm() {
	runtime.AddCleanup(new(sentinel), (*Pacer).cycle, p)
}

// cycle runs after a collection: it sets the collector for the pace
// allocation went at since the one before, and arms the next.
func (p *Pacer) cycle() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	now := time.Now()
	allocated, live, overhead := p.read()
	perSecond := float64(allocated-p.lastSeen) / now.Sub(p.lastAt).Seconds()
	p.lastAt, p.lastSeen = now, allocated
	p.apply(settingFor(live, overhead, perSecond, p.headroom, p.defaults))
	p.arm()
}

// apply sets s, in the order that never leaves a raised percentage
// without its memory limit.
func (p *Pacer) apply(s setting) {
	if s == p.set {
		return
	}
	if s.percent > p.set.percent {
		debug.SetMemoryLimit(s.limit)
		debug.SetGCPercent(s.percent)
	} else {
		debug.SetGCPercent(s.percent)
		debug.SetMemoryLimit(s.limit)
	}
	p.set = s
}

// current is the collector's percentage and memory limit now.
func current() (percent int, limit int64) {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64()), int64(s[1].Value.Uint64())
}

// read reads the runtime's figures and returns the bytes allocated in
// all, the heap live after the last cycle, and the memory the runtime
// holds besides the heap (stacks, metadata, buffers).
func (p *Pacer) read() (allocated, live, overhead uint64) {
	metrics.Read(p.samples)
	v := func(i int) uint64 { return p.samples[i].Value.Uint64() }
	return v(1), v(0), v(2) - v(3) - v(4) - v(5) - v(6)
}

// settingFor is the setting for a heap with live bytes live, overhead
// bytes of memory besides, allocating perSecond bytes a second. When the
// default percentage would run more than busyCycles cycles a second, the
// percentage allows headroom bytes of growth between cycles (never less
// than the default), and a memory limit of twice that above what is held
// now caps it: the percentage is set after a cycle for the live heap of
// that cycle, and until the next one's sets it again a heap that grew
// meanwhile (large calls arriving) would be allowed that percentage of
// its new size. Otherwise it is the default, with no limit.
func settingFor(live, overhead uint64, perSecond float64, headroom uint64, defaults int) setting {
	live = max(live, minLive)
	growth := float64(live) * float64(defaults) / 100 // between cycles, by default
	percent := max(defaults, int((headroom*100+live-1)/live))
	if perSecond < growth*busyCycles || percent == defaults {
		return setting{defaults, noLimit}
	}
	return setting{percent, int64(live + overhead + 2*headroom)}
}
