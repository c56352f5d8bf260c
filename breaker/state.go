package breaker

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// Mode is the state of one dependency's breaker.
type Mode string

const (
	// Closed means every task is admitted (subject to the ramp after a close);
	// failures are counted in the window.
	Closed Mode = "closed"
	// Open means tasks that need the dependency are deferred without calling it.
	Open Mode = "open"
	// HalfOpen means a few probes are admitted; the rest are deferred.
	HalfOpen Mode = "half_open"
)

// Modes lists every Mode.
func Modes() []Mode { return []Mode{Closed, Open, HalfOpen} }

// ErrMode is returned for a mode that is not one of Modes.
var ErrMode = errors.New("breaker: unknown mode")

// ParseMode returns the Mode named s, or an error wrapping ErrMode.
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes() {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("%w %q", ErrMode, s)
}

// State is one dependency's breaker as a Store keeps it. The zero State is
// a closed breaker that has seen nothing (Version 0: never stored).
type State struct {
	// Mode is the breaker's state ("" reads as Closed).
	Mode Mode `json:"mode"`
	// Version is the store's version of the state: every write is a
	// compare-and-set on it, 0 while nothing was stored.
	Version int64 `json:"version"`
	// WindowStart, Buckets and Failures: the failures of the last Window
	// (closed), counted in WindowBuckets buckets of Window/WindowBuckets:
	// Buckets[0] is the oldest bucket kept, which begins at WindowStart;
	// Failures is their sum. A state stored before Buckets existed (a
	// window fixed at its first failure) reads as one bucket at WindowStart.
	WindowStart time.Time `json:"window_start,omitzero"`
	Buckets     []int     `json:"buckets,omitempty"`
	Failures    int       `json:"failures,omitempty"`
	// Tenants: the most recent distinct tenants whose failures are in the
	// window, at most MaxTenants, oldest first, each as its TenantHash
	// (never the tenant itself) with the bucket it last failed in and
	// since when it fails. A state stored before Tenants existed has none
	// and counts on.
	Tenants []TenantSeen `json:"tenants,omitempty"`
	// Until: while open, when probing may start.
	Until time.Time `json:"until,omitzero"`
	// Reopens: the failed probings since it last closed; each doubles the
	// time it stays open, up to MaxOpenFactor times OpenFor.
	Reopens int `json:"reopens,omitempty"`
	// Probes, Passed and ProbeSince: while half-open, the probes admitted,
	// the successes seen, and when the probing began.
	Probes     int       `json:"probes,omitempty"`
	Passed     int       `json:"passed,omitempty"`
	ProbeSince time.Time `json:"probe_since,omitzero"`
	// ProbeFailures: while half-open, the TenantHash of each distinct
	// tenant whose probe failed in this probing (fewer than MinTenants:
	// at MinTenants it reopens).
	ProbeFailures []string `json:"probe_failures,omitempty"`
	// RampFrom: while closed after an open, when the ramp began (zero: no ramp).
	RampFrom time.Time `json:"ramp_from,omitzero"`
	// Held: an owner holds the breaker open (Force); it does not close by itself.
	Held bool `json:"held,omitempty"`
	// Owner and Why: who last forced the breaker and why (empty when no
	// one has).
	Owner string `json:"owner,omitempty"`
	Why   string `json:"why,omitempty"`
	// Changed and Cause: the last transition, when and why.
	Changed time.Time `json:"changed,omitzero"`
	Cause   string    `json:"cause,omitempty"`
}

// TenantSeen is one tenant whose failures are in a closed breaker's
// window: its TenantHash; Bucket, the index in State.Buckets of the
// bucket it last failed in; and Since, when it began failing (Unix
// seconds: its first failure since it was last absent from the window),
// which RetryDeferral reads.
type TenantSeen struct {
	Hash   string `json:"hash"`
	Bucket int    `json:"bucket"`
	Since  int64  `json:"since,omitempty"`
}

// TenantHash is how a State keeps a tenant: the first 8 hex digits of the
// SHA-256 of the tenant ("" is a tenant too: a task without one). It is a
// prefix of triage's hashed tenant (triage.HashValue), so the two can be
// matched; it keeps the tenant out of the store in clear.
func TenantHash(tenant string) string {
	h := sha256.Sum256([]byte(tenant))
	return hex.EncodeToString(h[:4])
}

// mode is s.Mode with "" read as Closed.
func (s State) mode() Mode {
	if s.Mode == "" {
		return Closed
	}
	return s.Mode
}

// Settings are a pipeline's breaker settings (pipeline.Breaker in
// pipelines.json). WithDefaults fills the zero fields.
type Settings struct {
	// Threshold is optional (default 5): the failures within Window that open it.
	Threshold int
	// MinTenants is optional (default 2 with WithDefaults; below 1 reads as
	// 1): the distinct tenants whose failures must be in the window, beside
	// Threshold, for it to open, so that one tenant's failures (its revoked
	// key, its exhausted quota, a hostile producer) cannot defer every
	// tenant's tasks. 1 opens on any tenant's failures: what a pipeline of a
	// single tenant needs. At most MaxTenants.
	MinTenants int
	// Window is optional (default 60 s): the failure window. It slides: the
	// failures counted are those of the last Window, to a bucket
	// (Window/WindowBuckets).
	Window time.Duration
	// OpenFor is optional (default 30 s): how long it stays open before
	// probing (longer when the provider's Retry-After says so).
	OpenFor time.Duration
	// Probes is optional (default 3): the probes admitted half-open, and
	// the successes that close it.
	Probes int
	// Ramp is optional (default 60 s): after closing, how long the share of
	// admitted tasks takes to grow from 0 to all.
	Ramp time.Duration
}

// Defaults of Settings.
const (
	DefaultThreshold  = 5
	DefaultMinTenants = 2
	DefaultWindow     = 60 * time.Second
	DefaultOpenFor    = 30 * time.Second
	DefaultProbes     = 3
	DefaultRamp       = 60 * time.Second
)

// WindowBuckets is the number of buckets a Window is counted in. A failure
// older than Window is never counted; one younger than Window less a
// bucket always is. Ten buckets keep the stored state small (one write a
// failure while closed) whatever the threshold, as Resilience4j's
// time-based sliding window keeps one partial count per second.
const WindowBuckets = 10

// MaxTenants bounds State.Tenants, whatever the tenant count of the
// pipeline: the most recent distinct tenants of the window are kept, and
// Settings.MinTenants may be at most this many.
const MaxTenants = 8

// TenantsText says n, a count of State.TenantsAt, in words: "1 tenant",
// "3 tenants", and "8 tenants or more" at MaxTenants, since a state keeps
// no more than that.
func TenantsText(n int) string {
	switch {
	case n == 1:
		return "1 tenant"
	case n >= MaxTenants:
		return fmt.Sprintf("%d tenants or more", n)
	}
	return fmt.Sprintf("%d tenants", n)
}

// MaxOpenFactor bounds the time a breaker stays open after failed probes:
// OpenFor doubles with each reopening, up to this many times OpenFor, so a
// long outage costs fewer deferrals and probes while recovery is still
// seen within MaxOpenFactor × OpenFor.
const MaxOpenFactor = 4

// MaxWait is the longest a Decision defers a task: SQS's longest message
// delay, which the uncounted requeue uses.
const MaxWait = 15 * time.Minute

// ErrSettings is wrapped by Settings.Validate's errors.
var ErrSettings = errors.New("breaker: invalid settings")

// WithDefaults returns s with its zero fields set to the defaults.
func (s Settings) WithDefaults() Settings {
	if s.Threshold == 0 {
		s.Threshold = DefaultThreshold
	}
	if s.MinTenants == 0 {
		s.MinTenants = DefaultMinTenants
	}
	if s.Window == 0 {
		s.Window = DefaultWindow
	}
	if s.OpenFor == 0 {
		s.OpenFor = DefaultOpenFor
	}
	if s.Probes == 0 {
		s.Probes = DefaultProbes
	}
	if s.Ramp == 0 {
		s.Ramp = DefaultRamp
	}
	return s
}

// Validate reports settings out of range (after WithDefaults).
func (s Settings) Validate() error {
	var errs []error
	bad := func(f string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: "+f, append([]any{ErrSettings}, a...)...))
	}
	if s.Threshold < 1 || s.Threshold > 10000 {
		bad("threshold %d is outside 1..10000", s.Threshold)
	}
	if s.MinTenants < 1 || s.MinTenants > MaxTenants {
		bad("min_tenants %d is outside 1..%d (1: a pipeline of a single tenant)", s.MinTenants, MaxTenants)
	}
	if s.Window < time.Second || s.Window > time.Hour {
		bad("window %s is outside 1s..1h", s.Window)
	}
	if s.OpenFor < time.Second || s.OpenFor > MaxWait {
		bad("open_for %s is outside 1s..15m (SQS's longest message delay)", s.OpenFor)
	}
	if s.Probes < 1 || s.Probes > 100 {
		bad("probes %d is outside 1..100", s.Probes)
	}
	if s.Ramp < 0 || s.Ramp > time.Hour {
		bad("ramp %s is outside 0..1h", s.Ramp)
	}
	return errors.Join(errs...)
}
