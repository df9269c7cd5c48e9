package gcpace

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestSettingFor(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name      string
		live      uint64
		perSecond float64
		defaults  int
		want      setting
	}{
		{"idle: the default", 4 * mib, 1 * mib, 100, setting{100, noLimit}},
		{"just under ten default cycles a second", 4 * mib, 40*mib - 1, 100, setting{100, noLimit}},
		{"busy: room for the headroom, capped at twice it above what is held", 4 * mib, 40 * mib, 100, setting{400, 4*mib + 3*mib + 32*mib}},
		{"busy, a nearly empty heap counts as 1 MiB", 10, 100 * mib, 100, setting{1600, 1*mib + 3*mib + 32*mib}},
		{"busy, a heap larger than the headroom keeps the default", 64 * mib, 1 << 40, 100, setting{100, noLimit}},
		{"busy, rounded up", 3 * mib, 1 << 40, 100, setting{534, 3*mib + 3*mib + 32*mib}},
		{"a lower default is the floor, and sets what busy is", 4 * mib, 20 * mib, 50, setting{400, 4*mib + 3*mib + 32*mib}},
		{"a higher default that gives more room is kept, with no limit", 4 * mib, 1 << 40, 800, setting{800, noLimit}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := settingFor(tt.live, 3*mib, tt.perSecond, 16*mib, tt.defaults); got != tt.want {
				t.Errorf("settingFor(%d, 3 MiB, %.0f, 16 MiB, %d) = %+v, want %+v", tt.live, tt.perSecond, tt.defaults, got, tt.want)
			}
		})
	}
}

// TestARaisedPercentageAlwaysHasALimit: whatever the figures, a
// percentage above the default comes with a memory limit no higher than
// twice the headroom above what is held, and the default with none.
func TestARaisedPercentageAlwaysHasALimit(t *testing.T) {
	const headroom, overhead = 16 << 20, 5 << 20
	for live := uint64(0); live < 64<<20; live += 1 << 18 {
		for _, perSecond := range []float64{0, 1 << 20, 1 << 24, 1 << 28, 1 << 32} {
			s := settingFor(live, overhead, perSecond, headroom, 100)
			switch {
			case s.percent > 100 && (s.limit == noLimit || uint64(s.limit) > max(live, minLive)+overhead+2*headroom):
				t.Fatalf("live %d, %.0f B/s: percentage %d with limit %d", live, perSecond, s.percent, s.limit)
			case s.percent == 100 && s.limit != noLimit:
				t.Fatalf("live %d, %.0f B/s: the default percentage with limit %d", live, perSecond, s.limit)
			case s.percent < 100:
				t.Fatalf("live %d, %.0f B/s: percentage %d below the default", live, perSecond, s.percent)
			}
		}
	}
}

// garbage is where churn's allocations go, so the compiler keeps them.
var garbage []byte

// churn allocates fast until done says stop or d passes, and reports
// whether done did.
func churn(d time.Duration, done func() bool) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); {
		for range 64 {
			garbage = make([]byte, 64<<10)
		}
		if done() {
			return true
		}
	}
	return false
}

// settle runs collections, slowly, until done says stop or five seconds
// pass, and reports whether done did.
func settle(done func() bool) bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		runtime.GC()
		time.Sleep(10 * time.Millisecond) // the cleanup runs after the cycle
		if done() {
			return true
		}
	}
	return false
}

func noEnv(string) string { return "" }

func currentPercent() int { percent, _ := current(); return percent }

func TestBusyHeapGetsTheHeadroomAndAnIdleOneTheDefault(t *testing.T) {
	defaults := currentPercent()
	p := Start(64<<20, noEnv)
	defer p.Stop()
	if !churn(5*time.Second, func() bool { return currentPercent() > defaults }) {
		t.Fatalf("allocating fast for 5 s left the percentage at %d, want above the default %d", currentPercent(), defaults)
	}
	if percent, limit := current(); limit == noLimit {
		t.Fatalf("busy: percentage %d with no memory limit", percent)
	}
	if !settle(func() bool { return currentPercent() == defaults }) {
		t.Fatalf("idle collections left the percentage at %d, want the default %d back", currentPercent(), defaults)
	}
	if _, limit := current(); limit != noLimit {
		t.Fatalf("idle: memory limit %d left set", limit)
	}
	if !churn(5*time.Second, func() bool { return currentPercent() > defaults }) {
		t.Fatalf("allocating fast again left the percentage at %d, want above the default %d", currentPercent(), defaults)
	}
	p.Stop()
	if percent, limit := current(); percent != defaults || limit != noLimit {
		t.Fatalf("after Stop the percentage is %d and the memory limit %d, want the default %d and none", percent, limit, defaults)
	}
	if churn(500*time.Millisecond, func() bool { return currentPercent() != defaults }) {
		t.Fatalf("after Stop, allocating fast set the percentage to %d; want it left at %d", currentPercent(), defaults)
	}
	p.Stop() // a second Stop does nothing
}

func TestAPacingChosenElsewhereIsLeftAlone(t *testing.T) {
	tests := []struct {
		name  string
		env   map[string]string
		limit int64 // set by the program before Start
	}{
		{name: "GOGC set", env: map[string]string{"GOGC": "200"}},
		{name: "GOMEMLIMIT set", env: map[string]string{"GOMEMLIMIT": "1GiB"}},
		{name: "a memory limit set", limit: 1 << 40},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.limit != 0 {
				defer debug.SetMemoryLimit(debug.SetMemoryLimit(tt.limit))
			}
			defaults, limit := current()
			p := Start(64<<20, func(name string) string { return tt.env[name] })
			defer p.Stop()
			if churn(500*time.Millisecond, func() bool { return currentPercent() != defaults }) {
				t.Fatalf("allocating fast set the percentage to %d; want it left at %d", currentPercent(), defaults)
			}
			p.Stop()
			if percent, l := current(); percent != defaults || l != limit {
				t.Fatalf("after Stop: percentage %d, limit %d; want %d and %d as they were", percent, l, defaults, limit)
			}
		})
	}
}

func TestStoppingAZeroPacerChangesNothing(t *testing.T) {
	percent, limit := current()
	var p Pacer
	p.Stop()
	p.Stop()
	if pc, l := current(); pc != percent || l != limit {
		t.Fatalf("after a zero Pacer's Stop: percentage %d, limit %d; want %d and %d as they were", pc, l, percent, limit)
	}
}
