package breaker

import (
	"cmp"
	"slices"
	"time"
)

// Decision is what Admit says about one task that needs the dependency.
type Decision struct {
	// Admit: call the dependency. When false, defer the task for Wait.
	Admit bool
	// Probe: the task is one of the half-open probes; report its result.
	Probe bool
	// Wait: how long to defer a task not admitted (at least a second, at
	// most MaxWait).
	Wait time.Duration
	// Mode: the breaker's mode the decision was made in.
	Mode Mode
}

// Transition is a change of mode, which a Breaker logs and counts.
type Transition struct {
	From, To Mode
	// Cause says why, in a few words: "threshold", "retry_after", "probing",
	// "probe_failed", "probes_passed", "forced_open", "forced_closed".
	Cause string
	// Failures and Tenants: the failures in the window when it opened on
	// the threshold, and the distinct tenants they came from.
	Failures, Tenants int
	// Tenant: the TenantHash of the failure that moved it (threshold,
	// probe_failed), "" otherwise.
	Tenant string
}

// Causes of a Transition.
const (
	CauseThreshold    = "threshold"
	CauseProbing      = "probing"
	CauseProbeFailed  = "probe_failed"
	CauseProbesPassed = "probes_passed"
	CauseForcedOpen   = "forced_open"
	CauseForcedClosed = "forced_closed"
)

func clampWait(d time.Duration) time.Duration {
	return min(max(d, time.Second), MaxWait)
}

func transition(s *State, to Mode, cause string, now time.Time) *Transition {
	t := &Transition{From: s.mode(), To: to, Cause: cause, Failures: s.Failures, Tenants: len(s.Tenants)}
	s.Mode, s.Changed, s.Cause = to, now, cause
	return t
}

// open moves s to Open until now + max(OpenFor, retryAfter), OpenFor
// doubled for each failed probing since it last closed (at most
// MaxOpenFactor × OpenFor, and MaxWait).
func open(s *State, cfg Settings, now time.Time, retryAfter time.Duration, cause string) *Transition {
	t := transition(s, Open, cause, now)
	d := cfg.OpenFor
	if cause == CauseProbeFailed {
		s.Reopens++
		d = min(cfg.OpenFor<<min(s.Reopens, 8), MaxOpenFactor*cfg.OpenFor, MaxWait)
	}
	s.Until = now.Add(max(d, retryAfter))
	s.WindowStart, s.Buckets, s.Failures, s.Tenants = time.Time{}, nil, 0, nil
	s.Probes, s.Passed, s.ProbeSince, s.ProbeFailures = 0, 0, time.Time{}, nil
	s.RampFrom = time.Time{}
	return t
}

// FailuresAt returns the failures of s's window still within the last
// window at now (the stored Failures is the count at the last failure).
func (s State) FailuresAt(window time.Duration, now time.Time) int {
	w := max(int64(window/WindowBuckets), 1)
	if len(s.Buckets) == 0 {
		if s.WindowStart.IsZero() || !now.Before(s.WindowStart.Add(window)) {
			return 0
		}
		return s.Failures
	}
	idx, first, n := now.UnixNano()/w, s.WindowStart.UnixNano()/w, 0
	for i, c := range s.Buckets {
		if first+int64(i) > idx-WindowBuckets {
			n += c
		}
	}
	return n
}

// TenantsAt returns the distinct tenants whose failures are in s's window
// at now (at most MaxTenants: the most recent are kept).
func (s State) TenantsAt(window time.Duration, now time.Time) int {
	if len(s.Buckets) == 0 {
		return 0
	}
	w := max(int64(window/WindowBuckets), 1)
	idx, first, n := now.UnixNano()/w, s.WindowStart.UnixNano()/w, 0
	for _, t := range s.Tenants {
		if first+int64(t.Bucket) > idx-WindowBuckets {
			n++
		}
	}
	return n
}

// countFailure counts a failure of tenant (its TenantHash) at now in s's
// sliding window: the buckets that fell out of the last window are
// dropped with the tenants last seen in them, the failure is added to
// now's bucket (or, when another worker's clock ran ahead, to the
// newest), the tenant is marked as seen in it (the oldest tenant dropped
// past MaxTenants), and Failures becomes the sum.
func countFailure(s *State, window time.Duration, now time.Time, tenant string) {
	w := max(int64(window/WindowBuckets), 1)
	idx := now.UnixNano() / w
	first := s.WindowStart.UnixNano() / w
	if len(s.Buckets) == 0 && s.Failures > 0 && !s.WindowStart.IsZero() {
		s.Buckets = []int{s.Failures} // stored with a window fixed at its first failure
	}
	buckets := s.Buckets
	// The tenants by absolute bucket number while the buckets move.
	type seen struct {
		hash      string
		at, since int64
	}
	var tenants []seen
	if len(buckets) == 0 || idx-(first+int64(len(buckets))-1) >= WindowBuckets {
		buckets, first = nil, idx
	} else {
		for _, t := range s.Tenants {
			tenants = append(tenants, seen{t.Hash, first + int64(min(max(t.Bucket, 0), len(buckets)-1)), t.Since})
		}
	}
	buckets = append([]int(nil), buckets...)
	for first+int64(len(buckets)) <= idx {
		buckets = append(buckets, 0)
	}
	at := min(max(idx-first, 0), int64(len(buckets))-1)
	buckets[at]++
	at += first
	found := false
	for i := range tenants {
		if tenants[i].hash == tenant {
			tenants[i].at, found = max(tenants[i].at, at), true
		}
	}
	if !found {
		tenants = append(tenants, seen{tenant, at, now.Unix()})
	}
	// Keep only the buckets of the last window, and from the first one
	// that holds a failure.
	for len(buckets) > 1 && (first <= idx-WindowBuckets || buckets[0] == 0) {
		buckets, first = buckets[1:], first+1
	}
	slices.SortStableFunc(tenants, func(a, b seen) int { return cmp.Compare(a.at, b.at) })
	s.Tenants = nil
	for _, t := range tenants {
		if t.at >= first {
			s.Tenants = append(s.Tenants, TenantSeen{Hash: t.hash, Bucket: int(t.at - first), Since: t.since})
		}
	}
	if n := len(s.Tenants); n > MaxTenants {
		s.Tenants = s.Tenants[n-MaxTenants:]
	}
	s.Buckets, s.WindowStart, s.Failures = buckets, time.Unix(0, first*w).UTC(), 0
	for _, n := range buckets {
		s.Failures += n
	}
}

// openWait is how long an open breaker defers a task: while held, about
// OpenFor; otherwise until probing may start, spread over half an OpenFor
// so that the deferred tasks do not come back together, and at least a
// quarter of OpenFor (pipeline.Breaker.RequiredRequeues counts on it).
// It is false once probing may start.
func openWait(s State, cfg Settings, now time.Time, r float64) (time.Duration, bool) {
	if s.Held {
		return clampWait(cfg.OpenFor + time.Duration(r*float64(cfg.OpenFor)/2)), true
	}
	if !now.Before(s.Until) {
		return 0, false
	}
	return clampWait(max(s.Until.Sub(now), cfg.OpenFor/4) + time.Duration(r*float64(cfg.OpenFor)/2)), true
}

// halfOpenWait is how long a half-open breaker defers a task it does not
// admit as a probe.
func halfOpenWait(cfg Settings, r float64) time.Duration {
	return clampWait(cfg.OpenFor/4 + time.Duration(r*float64(cfg.OpenFor)/4))
}

// Deferral says whether a task that needs the dependency and has just
// failed should be deferred rather than retried, and for how long: while
// the breaker is open or half-open, as Admit would defer it. Unlike Admit
// it never claims a probe or moves the breaker: an open breaker whose time
// is up defers the task as half-open would.
func Deferral(s State, cfg Settings, now time.Time, r float64) (time.Duration, bool) {
	switch s.mode() {
	case Open:
		if w, ok := openWait(s, cfg, now, r); ok {
			return w, true
		}
		return halfOpenWait(cfg, r), true
	case HalfOpen:
		return halfOpenWait(cfg, r), true
	}
	return 0, false
}

// RetryDeferral says whether a task of tenant that needs the dependency,
// has already spent a receive and has just failed on it again while the
// breaker is closed should be deferred rather than retried (counted), and
// for how long. So it is while the window holds failures of at least
// MinTenants tenants (an outage building up: the breaker may open before
// the task's next receive), and while its own tenant has been failing for
// less than a Window (another tenant's failures may yet show an outage).
// A tenant that has failed alone for a whole window has a problem of its
// own (its revoked key, its quota): false, and its task is retried as any
// failure of its class, not deferred for as long as its requeues last.
// The wait is a quarter of OpenFor and up to as much again (r in [0, 1)),
// the least a deferral waits. Open or half-open: false (see Deferral).
func RetryDeferral(s State, cfg Settings, now time.Time, tenant string, r float64) (time.Duration, bool) {
	if s.mode() != Closed {
		return 0, false
	}
	ok := s.TenantsAt(cfg.Window, now) >= max(cfg.MinTenants, 1)
	if !ok && len(s.Buckets) > 0 {
		w := max(int64(cfg.Window/WindowBuckets), 1)
		idx, first, h := now.UnixNano()/w, s.WindowStart.UnixNano()/w, TenantHash(tenant)
		for _, t := range s.Tenants {
			if t.Hash == h && first+int64(t.Bucket) > idx-WindowBuckets && t.Since > 0 {
				ok = now.Sub(time.Unix(t.Since, 0)) < cfg.Window
			}
		}
	}
	if !ok {
		return 0, false
	}
	q := cfg.OpenFor / 4
	return clampWait(q + time.Duration(r*float64(q))), true
}

// Admit decides about one task that needs the dependency. r is a random
// value in [0, 1) (the jitter and the ramp's draw). It returns the decision,
// the next state, whether that state must be written (a compare-and-set on
// s.Version) before the decision holds, and the transition it makes, if any.
func Admit(s State, cfg Settings, now time.Time, r float64) (Decision, State, bool, *Transition) {
	switch s.mode() {
	case Open:
		if w, ok := openWait(s, cfg, now, r); ok {
			return Decision{Wait: w, Mode: Open}, s, false, nil
		}
		t := transition(&s, HalfOpen, CauseProbing, now)
		s.Probes, s.Passed, s.ProbeSince = 1, 0, now
		return Decision{Admit: true, Probe: true, Mode: HalfOpen}, s, true, t
	case HalfOpen:
		if s.Probes < cfg.Probes {
			s.Probes++
			return Decision{Admit: true, Probe: true, Mode: HalfOpen}, s, true, nil
		}
		if !now.Before(s.ProbeSince.Add(cfg.OpenFor)) {
			// The probes never reported back (a worker died): probe again.
			s.Probes, s.Passed, s.ProbeSince, s.ProbeFailures = 1, 0, now, nil
			return Decision{Admit: true, Probe: true, Mode: HalfOpen}, s, true, nil
		}
		return Decision{Wait: halfOpenWait(cfg, r), Mode: HalfOpen}, s, false, nil
	}
	if s.RampFrom.IsZero() || cfg.Ramp <= 0 {
		return Decision{Admit: true, Mode: Closed}, s, false, nil
	}
	elapsed := now.Sub(s.RampFrom)
	if elapsed >= cfg.Ramp || r*float64(cfg.Ramp) < float64(elapsed) {
		return Decision{Admit: true, Mode: Closed}, s, false, nil
	}
	// This task's turn comes when the ramp reaches its draw.
	return Decision{Wait: clampWait(time.Duration(r*float64(cfg.Ramp)) - elapsed), Mode: Closed}, s, false, nil
}

// Fail records a failure of the dependency for a task of tenant (""
// when the task names none: one tenant like any other; the State keeps
// its TenantHash) with the provider's retryAfter (0 without one). Closed,
// it opens when the window holds Threshold failures from at least
// MinTenants distinct tenants: one tenant's failures alone keep counting
// but do not open it. Half-open, failed probes of MinTenants distinct
// tenants reopen it; a failed probe of a tenant alone frees its slot for
// another task. The provider's retryAfter keeps it open at most MaxWait: one
// task's Retry-After (a tenant's daily quota: hours) must not stop every
// tenant's probing for that long. It returns the next state, whether it
// must be written, and the transition it makes, if any.
func Fail(s State, cfg Settings, now time.Time, tenant string, retryAfter time.Duration) (State, bool, *Transition) {
	h := TenantHash(tenant)
	retryAfter = min(retryAfter, MaxWait)
	var t *Transition
	switch s.mode() {
	case Open:
		if !s.Held && retryAfter > 0 && now.Add(retryAfter).After(s.Until) {
			// The provider asked for longer: stay open that long.
			s.Until = now.Add(retryAfter)
			return s, true, nil
		}
		return s, false, nil
	case HalfOpen:
		if !slices.Contains(s.ProbeFailures, h) {
			s.ProbeFailures = append(slices.Clone(s.ProbeFailures), h)
		}
		if len(s.ProbeFailures) < max(cfg.MinTenants, 1) {
			// One tenant's failed probe may be its own (a revoked key, its
			// quota): it frees its probe slot for another task, so that a
			// tenant whose every call fails cannot keep the breaker from
			// closing while the provider serves the others.
			s.Probes = max(s.Probes-1, 0)
			return s, true, nil
		}
		t = open(&s, cfg, now, retryAfter, CauseProbeFailed)
	default:
		countFailure(&s, cfg.Window, now, h)
		if s.Failures < cfg.Threshold || len(s.Tenants) < max(cfg.MinTenants, 1) {
			return s, true, nil
		}
		t = open(&s, cfg, now, retryAfter, CauseThreshold)
	}
	t.Tenant = h
	return s, true, t
}

// Succeed records a success of the dependency. In the closed state it
// changes nothing (and writes nothing); half-open, Probes successes close
// the breaker and start the ramp.
func Succeed(s State, cfg Settings, now time.Time) (State, bool, *Transition) {
	if s.mode() != HalfOpen {
		return s, false, nil
	}
	s.Passed++
	if s.Passed < cfg.Probes {
		return s, true, nil
	}
	t := transition(&s, Closed, CauseProbesPassed, now)
	s.Probes, s.Passed, s.ProbeSince, s.ProbeFailures, s.Reopens = 0, 0, time.Time{}, nil, 0
	s.WindowStart, s.Buckets, s.Failures, s.Tenants, s.Until = time.Time{}, nil, 0, nil, time.Time{}
	s.RampFrom = now
	return s, true, t
}

// Force is an owner's change: open holds the breaker open until the owner
// closes it; !open closes it and starts the ramp. The transition is nil
// when the mode does not change (the owner and why are recorded all the
// same).
func Force(s State, cfg Settings, open bool, owner, why string, now time.Time) (State, *Transition) {
	s.Owner, s.Why = owner, why
	var t *Transition
	if open {
		if s.mode() != Open {
			t = transition(&s, Open, CauseForcedOpen, now)
		} else {
			s.Cause, s.Changed = CauseForcedOpen, now
		}
		s.Held, s.Until = true, now.Add(cfg.OpenFor)
		s.WindowStart, s.Buckets, s.Failures, s.Tenants, s.Probes, s.Passed, s.ProbeSince, s.RampFrom = time.Time{}, nil, 0, nil, 0, 0, time.Time{}, time.Time{}
		s.ProbeFailures = nil
		return s, t
	}
	if s.mode() != Closed {
		t = transition(&s, Closed, CauseForcedClosed, now)
		s.RampFrom = now
	} else {
		s.Cause, s.Changed = CauseForcedClosed, now
	}
	s.Held, s.Until, s.Reopens = false, time.Time{}, 0
	s.WindowStart, s.Buckets, s.Failures, s.Tenants, s.Probes, s.Passed, s.ProbeSince = time.Time{}, nil, 0, nil, 0, 0, time.Time{}
	s.ProbeFailures = nil
	return s, t
}
