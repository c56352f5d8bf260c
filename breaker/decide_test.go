package breaker_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentdlq/agentdlq/breaker"
)

var (
	t0  = time.Date(2026, 12, 7, 4, 0, 0, 0, time.UTC)
	cfg = breaker.Settings{Threshold: 3, Window: 10 * time.Second, OpenFor: 20 * time.Second, Probes: 2, Ramp: 30 * time.Second}
)

func TestFail(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		s          breaker.State
		at         time.Duration // after t0
		retryAfter time.Duration
		wantMode   breaker.Mode
		wantFails  int
		wantWrite  bool
		wantCause  string        // "" when no transition
		wantUntil  time.Duration // after t0; 0 to skip
	}{
		{name: "first failure starts the window", at: 0, wantMode: breaker.Closed, wantFails: 1, wantWrite: true},
		{name: "below the threshold", s: breaker.State{WindowStart: t0, Failures: 1}, at: 5 * time.Second, wantMode: breaker.Closed, wantFails: 2, wantWrite: true},
		{name: "the threshold opens", s: breaker.State{WindowStart: t0, Failures: 2}, at: 9 * time.Second, wantMode: breaker.Open, wantWrite: true, wantCause: breaker.CauseThreshold, wantUntil: 29 * time.Second},
		{name: "an expired window starts over", s: breaker.State{WindowStart: t0, Failures: 2}, at: 10 * time.Second, wantMode: breaker.Closed, wantFails: 1, wantWrite: true},
		{name: "a long Retry-After keeps it open longer", s: breaker.State{WindowStart: t0, Failures: 2}, at: time.Second, retryAfter: time.Minute, wantMode: breaker.Open, wantWrite: true, wantCause: breaker.CauseThreshold, wantUntil: 61 * time.Second},
		{name: "open: a failure changes nothing", s: breaker.State{Mode: breaker.Open, Until: t0.Add(20 * time.Second)}, at: time.Second, wantMode: breaker.Open, wantUntil: 20 * time.Second},
		{name: "open: a longer Retry-After extends it", s: breaker.State{Mode: breaker.Open, Until: t0.Add(20 * time.Second)}, at: time.Second, retryAfter: time.Minute, wantMode: breaker.Open, wantWrite: true, wantUntil: 61 * time.Second},
		{name: "a day's Retry-After (one tenant's quota) opens it for at most MaxWait", s: breaker.State{WindowStart: t0, Failures: 2}, at: time.Second, retryAfter: 24 * time.Hour, wantMode: breaker.Open, wantWrite: true, wantCause: breaker.CauseThreshold, wantUntil: time.Second + breaker.MaxWait},
		{name: "open: a day's Retry-After extends it to MaxWait, no further", s: breaker.State{Mode: breaker.Open, Until: t0.Add(20 * time.Second)}, at: time.Second, retryAfter: 24 * time.Hour, wantMode: breaker.Open, wantWrite: true, wantUntil: time.Second + breaker.MaxWait},
		{name: "half-open: a failed probe's day-long Retry-After reopens for at most MaxWait", s: breaker.State{Mode: breaker.HalfOpen, Probes: 2, ProbeSince: t0}, at: time.Second, retryAfter: 24 * time.Hour, wantMode: breaker.Open, wantWrite: true, wantCause: breaker.CauseProbeFailed, wantUntil: time.Second + breaker.MaxWait},
		{name: "held open: even a Retry-After changes nothing", s: breaker.State{Mode: breaker.Open, Held: true, Until: t0}, at: time.Second, retryAfter: time.Minute, wantMode: breaker.Open, wantUntil: 0},
		{name: "half-open: a failed probe reopens", s: breaker.State{Mode: breaker.HalfOpen, Probes: 2, ProbeSince: t0}, at: time.Second, wantMode: breaker.Open, wantWrite: true, wantCause: breaker.CauseProbeFailed, wantUntil: 41 * time.Second},
		{name: "half-open: a second failed probing doubles the open time", s: breaker.State{Mode: breaker.HalfOpen, Probes: 2, ProbeSince: t0, Reopens: 1}, at: time.Second, wantMode: breaker.Open, wantWrite: true, wantCause: breaker.CauseProbeFailed, wantUntil: 81 * time.Second},
		{name: "half-open: the open time stops growing at MaxOpenFactor", s: breaker.State{Mode: breaker.HalfOpen, Probes: 2, ProbeSince: t0, Reopens: 5}, at: time.Second, wantMode: breaker.Open, wantWrite: true, wantCause: breaker.CauseProbeFailed, wantUntil: 81 * time.Second},
		{name: "ramping: failures count again", s: breaker.State{RampFrom: t0, WindowStart: t0, Failures: 2}, at: time.Second, wantMode: breaker.Open, wantWrite: true, wantCause: breaker.CauseThreshold, wantUntil: 21 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, write, tr := breaker.Fail(tt.s, cfg, t0.Add(tt.at), "", tt.retryAfter)
			if got.Mode == "" {
				got.Mode = breaker.Closed
			}
			if got.Mode != tt.wantMode || write != tt.wantWrite {
				t.Errorf("mode %s write %v, want %s %v", got.Mode, write, tt.wantMode, tt.wantWrite)
			}
			if tt.wantMode == breaker.Closed && got.Failures != tt.wantFails {
				t.Errorf("failures %d, want %d", got.Failures, tt.wantFails)
			}
			switch {
			case tt.wantCause == "" && tr != nil:
				t.Errorf("transition %+v, want none", tr)
			case tt.wantCause != "" && (tr == nil || tr.Cause != tt.wantCause || tr.To != tt.wantMode):
				t.Errorf("transition %+v, want to %s by %s", tr, tt.wantMode, tt.wantCause)
			}
			if tt.wantUntil > 0 && !got.Until.Equal(t0.Add(tt.wantUntil)) {
				t.Errorf("until %s, want t0+%s", got.Until.Sub(t0), tt.wantUntil)
			}
		})
	}
}

func TestAdmit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		s         breaker.State
		at        time.Duration
		r         float64
		wantAdmit bool
		wantProbe bool
		wantWrite bool
		wantMode  breaker.Mode     // the next state's mode
		wantWait  [2]time.Duration // bounds of Wait when not admitted
		wantTo    breaker.Mode     // transition's target; "" for none
	}{
		{name: "closed admits", wantAdmit: true, wantMode: breaker.Closed},
		{name: "open defers until probing, with jitter", s: breaker.State{Mode: breaker.Open, Until: t0.Add(20 * time.Second)}, at: 5 * time.Second, r: 0.5,
			wantMode: breaker.Open, wantWait: [2]time.Duration{20 * time.Second, 20 * time.Second}},
		{name: "open defers at least a quarter of OpenFor", s: breaker.State{Mode: breaker.Open, Until: t0.Add(time.Millisecond)}, r: 0,
			wantMode: breaker.Open, wantWait: [2]time.Duration{5 * time.Second, 5 * time.Second}},
		{name: "open past its time: the first probe", s: breaker.State{Mode: breaker.Open, Until: t0}, at: time.Second,
			wantAdmit: true, wantProbe: true, wantWrite: true, wantMode: breaker.HalfOpen, wantTo: breaker.HalfOpen},
		{name: "held open never probes", s: breaker.State{Mode: breaker.Open, Held: true, Until: t0}, at: time.Hour, r: 0,
			wantMode: breaker.Open, wantWait: [2]time.Duration{20 * time.Second, 20 * time.Second}},
		{name: "half-open admits the second probe", s: breaker.State{Mode: breaker.HalfOpen, Probes: 1, ProbeSince: t0}, at: time.Second,
			wantAdmit: true, wantProbe: true, wantWrite: true, wantMode: breaker.HalfOpen},
		{name: "half-open with its probes out defers the rest", s: breaker.State{Mode: breaker.HalfOpen, Probes: 2, ProbeSince: t0}, at: time.Second, r: 0,
			wantMode: breaker.HalfOpen, wantWait: [2]time.Duration{5 * time.Second, 5 * time.Second}},
		{name: "half-open probes lost for OpenFor are replaced", s: breaker.State{Mode: breaker.HalfOpen, Probes: 2, ProbeSince: t0}, at: 20 * time.Second,
			wantAdmit: true, wantProbe: true, wantWrite: true, wantMode: breaker.HalfOpen},
		{name: "ramp: a draw past the ramp's share waits its turn", s: breaker.State{RampFrom: t0}, at: 6 * time.Second, r: 0.5,
			wantMode: breaker.Closed, wantWait: [2]time.Duration{9 * time.Second, 9 * time.Second}},
		{name: "ramp: a draw under the share is admitted", s: breaker.State{RampFrom: t0}, at: 6 * time.Second, r: 0.1,
			wantAdmit: true, wantMode: breaker.Closed},
		{name: "ramp over admits all", s: breaker.State{RampFrom: t0}, at: 30 * time.Second, r: 0.99,
			wantAdmit: true, wantMode: breaker.Closed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, next, write, tr := breaker.Admit(tt.s, cfg, t0.Add(tt.at), tt.r)
			if next.Mode == "" {
				next.Mode = breaker.Closed
			}
			if d.Admit != tt.wantAdmit || d.Probe != tt.wantProbe || write != tt.wantWrite || next.Mode != tt.wantMode {
				t.Errorf("admit %v probe %v write %v mode %s, want %v %v %v %s", d.Admit, d.Probe, write, next.Mode, tt.wantAdmit, tt.wantProbe, tt.wantWrite, tt.wantMode)
			}
			if !d.Admit && (d.Wait < tt.wantWait[0] || d.Wait > tt.wantWait[1]) {
				t.Errorf("wait %s, want %s..%s", d.Wait, tt.wantWait[0], tt.wantWait[1])
			}
			if (tr == nil) != (tt.wantTo == "") || tr != nil && tr.To != tt.wantTo {
				t.Errorf("transition %+v, want to %q", tr, tt.wantTo)
			}
		})
	}
}

func TestSucceedClosesAfterProbesAndRamps(t *testing.T) {
	t.Parallel()
	s := breaker.State{Mode: breaker.HalfOpen, Probes: 2, ProbeSince: t0}
	s, write, tr := breaker.Succeed(s, cfg, t0.Add(time.Second))
	if !write || tr != nil || s.Mode != breaker.HalfOpen || s.Passed != 1 {
		t.Fatalf("after one probe: %+v write %v transition %+v", s, write, tr)
	}
	s, write, tr = breaker.Succeed(s, cfg, t0.Add(2*time.Second))
	if !write || tr == nil || tr.Cause != breaker.CauseProbesPassed || s.Mode != breaker.Closed || !s.RampFrom.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("after two probes: %+v write %v transition %+v", s, write, tr)
	}
	// Closed, a success writes nothing.
	if _, write, tr := breaker.Succeed(s, cfg, t0.Add(3*time.Second)); write || tr != nil {
		t.Errorf("closed success wrote (%v) or moved (%+v)", write, tr)
	}
}

func TestForce(t *testing.T) {
	t.Parallel()
	s, tr := breaker.Force(breaker.State{}, cfg, true, "oncall", "provider incident", t0)
	if tr == nil || tr.To != breaker.Open || !s.Held || s.Owner != "oncall" || s.Why != "provider incident" {
		t.Fatalf("forced open: %+v %+v", s, tr)
	}
	s, tr = breaker.Force(s, cfg, false, "oncall", "fixed", t0.Add(time.Minute))
	if tr == nil || tr.To != breaker.Closed || s.Held || !s.RampFrom.Equal(t0.Add(time.Minute)) {
		t.Fatalf("forced closed: %+v %+v", s, tr)
	}
	if _, tr = breaker.Force(s, cfg, false, "oncall", "again", t0.Add(2*time.Minute)); tr != nil {
		t.Errorf("closing a closed breaker made a transition: %+v", tr)
	}
}

func TestSettings(t *testing.T) {
	t.Parallel()
	d := breaker.Settings{}.WithDefaults()
	if d.Threshold != breaker.DefaultThreshold || d.Window != breaker.DefaultWindow || d.Validate() != nil {
		t.Errorf("defaults %+v: %v", d, d.Validate())
	}
	if err := (breaker.Settings{Threshold: -1, Window: time.Millisecond, OpenFor: time.Hour, Probes: 1000, Ramp: -1}).Validate(); err == nil {
		t.Error("bad settings validated")
	}
	if d.MinTenants != breaker.DefaultMinTenants || breaker.DefaultMinTenants != 2 {
		t.Errorf("min tenants by default %d, want 2", d.MinTenants)
	}
	for _, n := range []int{-1, breaker.MaxTenants + 1} {
		s := d
		s.MinTenants = n
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "min_tenants") {
			t.Errorf("min tenants %d: %v, want an error naming min_tenants", n, err)
		}
	}
}

// TestFailTenants checks that the breaker opens only on the failures of at
// least MinTenants distinct tenants in the window, with a bounded list of
// hashed tenants.
func TestFailTenants(t *testing.T) {
	t.Parallel()
	two := cfg // threshold 3 in 10 s, buckets of 1 s
	two.MinTenants = 2
	type failure struct {
		at     time.Duration // after t0
		tenant string
	}
	fails := func(tenant string, ats ...time.Duration) []failure {
		var out []failure
		for _, at := range ats {
			out = append(out, failure{at, tenant})
		}
		return out
	}
	s := time.Second
	tests := []struct {
		name        string
		cfg         breaker.Settings
		failures    []failure
		wantMode    breaker.Mode
		wantFails   int // while closed
		wantTenants int // while closed, or the transition's when open
	}{
		{name: "one tenant never opens", cfg: two, failures: fails("acme", 0, s, 2*s, 3*s, 4*s, 5*s), wantMode: breaker.Closed, wantFails: 6, wantTenants: 1},
		{name: "a task without a tenant is one tenant", cfg: two, failures: fails("", 0, s, 2*s, 3*s), wantMode: breaker.Closed, wantFails: 4, wantTenants: 1},
		{name: "two tenants open", cfg: two, failures: append(fails("acme", 0, s), failure{2 * s, "globex"}), wantMode: breaker.Open, wantTenants: 2},
		{name: "a second tenant below the threshold does not open", cfg: two, failures: append(fails("acme", 0), failure{s, "globex"}), wantMode: breaker.Closed, wantFails: 2, wantTenants: 2},
		{name: "no tenant and the empty tenant are two", cfg: two, failures: append(fails("acme", 0, s), failure{2 * s, ""}), wantMode: breaker.Open, wantTenants: 2},
		// Globex's failure at 0.5 s leaves the window at 10.5 s: three
		// failures in the window, acme's alone.
		{name: "the window slides an old tenant out", cfg: two,
			failures: append(fails("globex", 500*time.Millisecond), fails("acme", 5*s, 10*s+500*time.Millisecond, 11*s)...), wantMode: breaker.Closed, wantFails: 3, wantTenants: 1},
		{name: "the old tenant back in the window opens", cfg: two,
			failures: append(fails("globex", 500*time.Millisecond), append(fails("acme", 5*s, 10*s+500*time.Millisecond, 11*s), failure{12 * s, "globex"})...), wantMode: breaker.Open, wantTenants: 2},
		{name: "a clock behind the newest bucket counts its tenant", cfg: two, failures: append(fails("acme", 5*s, 7*s), failure{4 * s, "globex"}), wantMode: breaker.Open, wantTenants: 2},
		{name: "min_tenants 1 opens on one tenant", cfg: func() breaker.Settings { c := two; c.MinTenants = 1; return c }(), failures: fails("acme", 0, s, 2*s), wantMode: breaker.Open, wantTenants: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var st breaker.State
			var tr *breaker.Transition
			for _, f := range tt.failures {
				var tf *breaker.Transition
				if st, _, tf = breaker.Fail(st, tt.cfg, t0.Add(f.at), f.tenant, 0); tf != nil {
					tr = tf
				}
			}
			mode := st.Mode
			if mode == "" {
				mode = breaker.Closed
			}
			if mode != tt.wantMode {
				t.Fatalf("mode %s, want %s (state %+v)", mode, tt.wantMode, st)
			}
			if mode == breaker.Open {
				last := tt.failures[len(tt.failures)-1]
				if tr == nil || tr.Cause != breaker.CauseThreshold || tr.Tenants != tt.wantTenants || tr.Tenant != breaker.TenantHash(last.tenant) {
					t.Errorf("transition %+v, want the threshold with %d tenants, the last one's hash %s", tr, tt.wantTenants, breaker.TenantHash(last.tenant))
				}
				if st.Tenants != nil {
					t.Errorf("an open state keeps tenants: %+v", st.Tenants)
				}
				return
			}
			last := t0.Add(tt.failures[len(tt.failures)-1].at)
			if st.Failures != tt.wantFails || len(st.Tenants) != tt.wantTenants || st.TenantsAt(tt.cfg.Window, last) != tt.wantTenants {
				t.Errorf("failures %d, tenants %+v (%d at the last failure), want %d failures of %d tenants",
					st.Failures, st.Tenants, st.TenantsAt(tt.cfg.Window, last), tt.wantFails, tt.wantTenants)
			}
			for _, seen := range st.Tenants {
				if seen.Bucket < 0 || seen.Bucket >= len(st.Buckets) || st.Buckets[seen.Bucket] == 0 {
					t.Errorf("tenant %+v is not in a bucket with a failure: %v", seen, st.Buckets)
				}
				for _, f := range tt.failures {
					if f.tenant != "" && strings.Contains(seen.Hash, f.tenant) {
						t.Errorf("the state holds the tenant %q in clear: %+v", f.tenant, seen)
					}
				}
			}
		})
	}
}

// TestFailTenantsBounded checks that the state keeps at most MaxTenants
// tenants, the most recent, whatever the tenants that fail.
func TestFailTenantsBounded(t *testing.T) {
	t.Parallel()
	many := cfg
	many.Threshold, many.MinTenants = 1000, breaker.MaxTenants
	var s breaker.State
	for i := range 50 {
		s, _, _ = breaker.Fail(s, many, t0.Add(time.Duration(i)*100*time.Millisecond), fmt.Sprint("tenant-", i), 0)
	}
	if len(s.Tenants) != breaker.MaxTenants || s.Failures != 50 {
		t.Fatalf("%d tenants kept of 50 (failures %d), want %d", len(s.Tenants), s.Failures, breaker.MaxTenants)
	}
	for i, seen := range s.Tenants {
		if want := breaker.TenantHash(fmt.Sprint("tenant-", 50-breaker.MaxTenants+i)); seen.Hash != want {
			t.Errorf("tenant %d: %s, want %s (the most recent, oldest first)", i, seen.Hash, want)
		}
	}
	// A tenant already kept is not kept twice.
	s, _, _ = breaker.Fail(s, many, t0.Add(5*time.Second), "tenant-45", 0)
	if len(s.Tenants) != breaker.MaxTenants || s.Tenants[len(s.Tenants)-1].Hash != breaker.TenantHash("tenant-45") {
		t.Errorf("after tenant-45 again: %+v", s.Tenants)
	}
	body, err := json.Marshal(s)
	if err != nil || len(body) > 1024 {
		t.Errorf("the stored state is %d bytes (%v), want at most 1 KiB", len(body), err)
	}
}

// TestFailReadsAStateWithoutTenants checks that a state stored before
// Tenants existed reads and counts on: its failures still count towards the
// threshold, and its tenants are unknown, so the tenants of the failures
// from now on decide.
func TestFailReadsAStateWithoutTenants(t *testing.T) {
	t.Parallel()
	two := cfg
	two.MinTenants = 2
	var old breaker.State
	stored := `{"mode":"closed","version":4,"window_start":"2026-12-07T04:00:00Z","buckets":[2],"failures":2,"changed":"2026-12-07T03:00:00Z","cause":"probes_passed"}`
	if err := json.Unmarshal([]byte(stored), &old); err != nil || old.Failures != 2 || old.Tenants != nil {
		t.Fatalf("the old state reads as %+v (%v)", old, err)
	}
	s, write, tr := breaker.Fail(old, two, t0.Add(time.Second), "acme", 0)
	if !write || tr != nil || s.Failures != 3 || len(s.Tenants) != 1 {
		t.Fatalf("write %v transition %+v, failures %d tenants %+v: want a write, closed on 3 failures of 1 tenant", write, tr, s.Failures, s.Tenants)
	}
	if _, _, tr = breaker.Fail(s, two, t0.Add(2*time.Second), "globex", 0); tr == nil || tr.To != breaker.Open || tr.Failures != 4 || tr.Tenants != 2 {
		t.Fatalf("a second tenant: transition %+v, want open on 4 failures of 2 tenants", tr)
	}
}

// TestFailedProbesOfOneTenantDoNotReopen checks the half-open breaker with
// MinTenants 2: a tenant whose own calls fail (a revoked key) frees its
// probe slot instead of reopening, so the others' probes can close it; a
// second tenant's failed probe reopens it (the provider is down).
func TestFailedProbesOfOneTenantDoNotReopen(t *testing.T) {
	t.Parallel()
	two := cfg // Probes 2
	two.MinTenants = 2
	s := breaker.State{Mode: breaker.HalfOpen, Probes: 2, ProbeSince: t0}
	for i := range 3 { // acme's tasks keep taking the probe slots, and failing
		var tr *breaker.Transition
		s, _, tr = breaker.Fail(s, two, t0.Add(time.Duration(i)*time.Second), "acme", 0)
		if s.Mode != breaker.HalfOpen || tr != nil || s.Probes != 1 {
			t.Fatalf("acme's failed probe %d: mode %s, %d probes, transition %+v; want half-open with its slot freed", i, s.Mode, s.Probes, tr)
		}
		d, next, write, _ := breaker.Admit(s, two, t0.Add(time.Duration(i)*time.Second), 0.5)
		if !d.Admit || !d.Probe || !write {
			t.Fatalf("after acme's failed probe %d: %+v, want the freed slot given to the next task", i, d)
		}
		s = next
	}
	closed := s
	for range two.Probes { // the other tenants' probes pass: the provider serves them
		closed, _, _ = breaker.Succeed(closed, two, t0.Add(5*time.Second))
	}
	if closed.Mode != breaker.Closed {
		t.Fatalf("after the probes passed: %s, want closed", closed.Mode)
	}
	s, _, tr := breaker.Fail(s, two, t0.Add(6*time.Second), "initech", 0)
	if s.Mode != breaker.Open || tr == nil || tr.Cause != breaker.CauseProbeFailed || tr.Tenant != breaker.TenantHash("initech") || s.ProbeFailures != nil {
		t.Fatalf("a second tenant's failed probe: mode %s, transition %+v, %v; want reopened", s.Mode, tr, s.ProbeFailures)
	}
	one := cfg
	one.MinTenants = 1
	if s, _, _ := breaker.Fail(breaker.State{Mode: breaker.HalfOpen, Probes: 1, ProbeSince: t0}, one, t0, "acme", 0); s.Mode != breaker.Open {
		t.Errorf("min_tenants 1: a failed probe left it %s, want open", s.Mode)
	}
}

// TestFailSlidingWindow checks that the window slides: a burst that
// straddles the end of a window fixed at its first failure still opens the
// breaker, and failures older than Window are never counted.
func TestFailSlidingWindow(t *testing.T) {
	t.Parallel()
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	tests := []struct {
		name     string
		at       []time.Duration // the failures, after t0, in order
		wantMode breaker.Mode
		wantFail int // the failures counted after the last one, while closed
	}{
		// A window fixed at the failure at 0 would end at 10 s and start
		// over with the failure at 10.5 s: 1 + 1, closed.
		{name: "a burst across a fixed window's end opens", at: []time.Duration{0, ms(9500), ms(10500), ms(11000)}, wantMode: breaker.Open},
		{name: "failures a window apart never add up", at: []time.Duration{0, ms(10500), ms(21000), ms(31500)}, wantMode: breaker.Closed, wantFail: 1},
		{name: "the oldest bucket falls out after a window", at: []time.Duration{ms(100), ms(9000), ms(10200)}, wantMode: breaker.Closed, wantFail: 2},
		{name: "within a window less a bucket every failure counts", at: []time.Duration{ms(100), ms(5000), ms(9050)}, wantMode: breaker.Open},
		{name: "a clock behind the newest bucket still counts", at: []time.Duration{ms(5000), ms(7000), ms(4000)}, wantMode: breaker.Open},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var s breaker.State
			for _, at := range tt.at {
				s, _, _ = breaker.Fail(s, cfg, t0.Add(at), "", 0)
			}
			mode := s.Mode
			if mode == "" {
				mode = breaker.Closed
			}
			if mode != tt.wantMode {
				t.Fatalf("mode %s after %v, want %s (state %+v)", mode, tt.at, tt.wantMode, s)
			}
			if mode != breaker.Closed {
				return
			}
			if s.Failures != tt.wantFail || len(s.Buckets) > breaker.WindowBuckets {
				t.Errorf("failures %d in %d buckets, want %d in at most %d", s.Failures, len(s.Buckets), tt.wantFail, breaker.WindowBuckets)
			}
			if last := t0.Add(tt.at[len(tt.at)-1]); last.Sub(s.WindowStart) >= cfg.Window || s.WindowStart.After(last) {
				t.Errorf("window start %s, not within the window before %s", s.WindowStart, last)
			}
		})
	}
}

// TestFailReadsAFixedWindowState checks that a state stored before the
// window slid (Failures and WindowStart, no Buckets) counts on.
func TestFailReadsAFixedWindowState(t *testing.T) {
	t.Parallel()
	old := breaker.State{Version: 4, WindowStart: t0, Failures: 1}
	s, write, tr := breaker.Fail(old, cfg, t0.Add(3*time.Second), "", 0)
	if !write || tr != nil || s.Failures != 2 || !s.WindowStart.Equal(t0) {
		t.Fatalf("write %v transition %v failures %d from %s, want a write, no transition, 2 from %s", write, tr, s.Failures, s.WindowStart, t0)
	}
	if s, _, tr = breaker.Fail(s, cfg, t0.Add(4*time.Second), "", 0); tr == nil || tr.To != breaker.Open || tr.Failures != 3 {
		t.Fatalf("third failure: transition %+v, want open on 3 failures", tr)
	}
	if s.Buckets != nil || s.Failures != 0 || !s.WindowStart.IsZero() {
		t.Errorf("open state keeps a window: %+v", s)
	}
}

// TestFailuresAt checks the count a status shows later: only the buckets
// still within the last window at that time.
func TestFailuresAt(t *testing.T) {
	t.Parallel()
	var s breaker.State
	for i, at := range []time.Duration{500 * time.Millisecond, 4200 * time.Millisecond} { // below cfg's threshold
		s, _, _ = breaker.Fail(s, cfg, t0.Add(at), []string{"acme", "globex"}[i], 0)
	}
	for _, tt := range []struct {
		at   time.Duration
		want int
	}{{5 * time.Second, 2}, {10 * time.Second, 1}, {14 * time.Second, 0}, {time.Hour, 0}} {
		if got := s.FailuresAt(cfg.Window, t0.Add(tt.at)); got != tt.want {
			t.Errorf("FailuresAt(%s) = %d, want %d", tt.at, got, tt.want)
		}
		if got := s.TenantsAt(cfg.Window, t0.Add(tt.at)); got != tt.want { // one failure a tenant
			t.Errorf("TenantsAt(%s) = %d, want %d", tt.at, got, tt.want)
		}
	}
	old := breaker.State{WindowStart: t0, Failures: 2} // stored before the window slid
	if got := old.FailuresAt(cfg.Window, t0.Add(9*time.Second)); got != 2 {
		t.Errorf("fixed-window state at 9s: %d, want 2", got)
	}
	if got := old.FailuresAt(cfg.Window, t0.Add(10*time.Second)); got != 0 {
		t.Errorf("fixed-window state at 10s: %d, want 0", got)
	}
}

// TestDeferral checks the deferral of a task that just failed: as Admit
// would defer it while open or half-open, never a probe, nothing closed.
func TestDeferral(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		s        breaker.State
		want     bool
		min, max time.Duration
	}{
		{name: "closed", s: breaker.State{}, want: false},
		{name: "open: until probing may start, spread", s: breaker.State{Mode: breaker.Open, Until: t0.Add(15 * time.Second)}, want: true, min: 15 * time.Second, max: 25 * time.Second},
		{name: "open, time up: as half-open", s: breaker.State{Mode: breaker.Open, Until: t0.Add(-time.Second)}, want: true, min: 5 * time.Second, max: 10 * time.Second},
		{name: "half-open", s: breaker.State{Mode: breaker.HalfOpen, Probes: 2, ProbeSince: t0}, want: true, min: 5 * time.Second, max: 10 * time.Second},
		{name: "held", s: breaker.State{Mode: breaker.Open, Held: true}, want: true, min: 20 * time.Second, max: 30 * time.Second},
	} {
		for _, r := range []float64{0, 0.999} {
			w, ok := breaker.Deferral(tt.s, cfg, t0, r)
			if ok != tt.want || (ok && (w < tt.min || w > tt.max)) {
				t.Errorf("%s (r %v): %s %v, want %v within %s..%s", tt.name, r, w, ok, tt.want, tt.min, tt.max)
			}
		}
	}
}

// TestRetryDeferral checks when a retried task's failure is deferred while
// the breaker is closed: while min_tenants tenants fail, or while its own
// tenant has failed for less than a window; not once its tenant has failed
// alone for a whole window.
func TestRetryDeferral(t *testing.T) {
	t.Parallel()
	high := cfg // threshold out of reach: the breaker stays closed
	high.Threshold, high.MinTenants = 100, 2
	one := high
	one.MinTenants = 1
	s := time.Second
	type failure struct {
		at     time.Duration
		tenant string
	}
	for _, tt := range []struct {
		name     string
		cfg      breaker.Settings
		failures []failure
		at       time.Duration
		tenant   string
		want     bool
	}{
		{name: "a tenant failing for a second", cfg: high, failures: []failure{{0, "acme"}, {s, "acme"}}, at: s, tenant: "acme", want: true},
		{name: "a tenant failing alone for less than a window", cfg: high, failures: []failure{{0, "acme"}, {4 * s, "acme"}, {8 * s, "acme"}, {9 * s, "acme"}}, at: 9 * s, tenant: "acme", want: true},
		{name: "a tenant failing alone for a whole window", cfg: high, failures: []failure{{0, "acme"}, {4 * s, "acme"}, {8 * s, "acme"}, {10 * s, "acme"}}, at: 10 * s, tenant: "acme", want: false},
		{name: "two tenants failing", cfg: high, failures: []failure{{0, "acme"}, {8 * s, "acme"}, {9 * s, "globex"}, {10 * s, "acme"}}, at: 10 * s, tenant: "acme", want: true},
		{name: "a tenant back after a window without failing starts over", cfg: high, failures: []failure{{0, "acme"}, {11 * s, "acme"}}, at: 11 * s, tenant: "acme", want: true},
		{name: "min_tenants 1: always, as before", cfg: one, failures: []failure{{0, "acme"}, {4 * s, "acme"}, {8 * s, "acme"}, {10 * s, "acme"}}, at: 10 * s, tenant: "acme", want: true},
		{name: "open: not this function's (Deferral)", cfg: high, at: s, tenant: "acme", want: false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var st breaker.State
			if tt.failures == nil {
				st = breaker.State{Mode: breaker.Open, Until: t0.Add(time.Minute)}
			}
			for _, f := range tt.failures {
				st, _, _ = breaker.Fail(st, tt.cfg, t0.Add(f.at), f.tenant, 0)
			}
			for _, r := range []float64{0, 0.999} {
				w, ok := breaker.RetryDeferral(st, tt.cfg, t0.Add(tt.at), tt.tenant, r)
				if ok != tt.want || (ok && (w < tt.cfg.OpenFor/4 || w > tt.cfg.OpenFor/2)) {
					t.Errorf("r %v: %s %v, want %v within %s..%s (state %+v)", r, w, ok, tt.want, tt.cfg.OpenFor/4, tt.cfg.OpenFor/2, st)
				}
			}
		})
	}
}

// TestTenantsText: a state keeps at most MaxTenants tenants, so that many
// may be more; the CLI and the console say so with the same words.
func TestTenantsText(t *testing.T) {
	for n, want := range map[int]string{1: "1 tenant", 3: "3 tenants", breaker.MaxTenants: fmt.Sprintf("%d tenants or more", breaker.MaxTenants)} {
		if got := breaker.TenantsText(n); got != want {
			t.Errorf("TenantsText(%d) = %q, want %q", n, got, want)
		}
	}
}
