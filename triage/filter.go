package triage

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/triage/dlq"
	"github.com/agentdlq/agentdlq/triage/internal/filtering"
	"github.com/agentdlq/agentdlq/triage/report"
)

// FilterFieldError is ParseFilter's error for a field's value that does not
// parse (a bad since or until): Field is one of FilterFields, so that a
// caller can name its own flag or parameter without reading the message.
type FilterFieldError struct {
	Field string
	Err   error
}

func (e *FilterFieldError) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *FilterFieldError) Unwrap() error { return e.Err }

// ParseFilter builds a Filter from text, as flags and URLs carry it: tool,
// tenant and contains as they are (trimmed), since and until as RFC 3339
// times or as durations ago ("2h", "90m", "7d": that long before now).
// Empty strings leave a field unset.
func ParseFilter(tool, tenant, since, until, contains string, now time.Time) (dlq.Filter, error) {
	f := dlq.Filter{Tool: strings.TrimSpace(tool), Tenant: strings.TrimSpace(tenant), Contains: strings.TrimSpace(contains)}
	var err error
	if f.Since, err = parseWhen(since, now); err != nil {
		return dlq.Filter{}, &FilterFieldError{Field: "since", Err: err}
	}
	if f.Until, err = parseWhen(until, now); err != nil {
		return dlq.Filter{}, &FilterFieldError{Field: "until", Err: err}
	}
	if err := f.Validate(); err != nil {
		return dlq.Filter{}, err
	}
	return f, nil
}

// parseWhen reads a point in time: an RFC 3339 time, or a duration ago
// ("2h", "90m", "1h30m", or days as "7d"), relative to now. "" is the zero
// time.
func parseWhen(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	d, err := parseAgo(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: %q is neither an RFC 3339 time (2026-12-02T08:00:00Z) nor a duration ago (2h, 90m, 7d)", filtering.ErrBadFilter, s)
	}
	if d <= 0 {
		return time.Time{}, fmt.Errorf("%w: %q: a duration ago must be positive", filtering.ErrBadFilter, s)
	}
	// Whole seconds: what Fields and String show is exactly what matches.
	return now.Add(-d).UTC().Truncate(time.Second), nil
}

// parseAgo is time.ParseDuration with days ("7d", "1d12h").
func parseAgo(s string) (time.Duration, error) {
	var days time.Duration
	if i := strings.IndexByte(s, 'd'); i > 0 {
		var n int
		if _, err := fmt.Sscanf(s[:i], "%d", &n); err != nil || fmt.Sprint(n) != s[:i] {
			return 0, errors.New("bad days")
		}
		days, s = time.Duration(n)*24*time.Hour, s[i+1:]
		if s == "" {
			return days, nil
		}
	}
	d, err := time.ParseDuration(s)
	return days + d, err
}

// errNoLetters is Narrow's error for a report read back from storage: it
// holds counts and groups, not the letters a filter needs.
var errNoLetters = errors.New("the report holds no letters (it was read back from storage): filtering needs a fresh scan")

// Narrow returns the report of the letters of r that f chooses: the same
// scan, rebuilt from the letters it holds (a report from Run; one read back
// from storage holds none: errNoLetters), as of r's own time. The zero
// Filter returns r. Narrow never changes r.
func Narrow(r *report.Report, p *pipeline.Pipeline, f dlq.Filter) (*report.Report, error) {
	if r == nil || f.IsZero() {
		return r, nil
	}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	all := make([]dlq.Tagged, 0, r.Totals.Messages)
	for i := range r.Groups {
		for _, t := range r.Groups[i].Letters {
			all = append(all, *t)
		}
	}
	if len(all) < r.Totals.Messages {
		return nil, errNoLetters
	}
	for _, t := range r.CopyLetters {
		all = append(all, *t)
	}
	o := buildOptions{FIFO: r.FIFO}
	if r.Expiry.RetentionSource == "queue" {
		o.Retention = time.Duration(r.Expiry.DLQRetentionSeconds) * time.Second
	}
	return narrowed(all, p, r.GeneratedAt, o, f, r), nil
}

// narrowed builds the report of the letters of all that f chooses, with
// the scan facts of base (queue, scan statistics, partial reasons).
func narrowed(all []dlq.Tagged, p *pipeline.Pipeline, now time.Time, o buildOptions, f dlq.Filter, base *report.Report) *report.Report {
	kept := filterTagged(all, f)
	r := buildWith(kept, p, now, o)
	r.Filter = &dlq.Filtered{Filter: f, Scanned: len(all), Matched: len(kept)}
	if base != nil {
		r.Queue, r.Scan, r.Complete, r.Partial = base.Queue, base.Scan, base.Complete, base.Partial
		r.PartialReasons = append([]string(nil), base.PartialReasons...)
	}
	return r
}

// filterTagged returns the letters of all that f chooses (all itself for
// the zero Filter).
func filterTagged(all []dlq.Tagged, f dlq.Filter) []dlq.Tagged {
	if f.IsZero() {
		return all
	}
	kept := make([]dlq.Tagged, 0, len(all))
	for i := range all {
		if f.Match(&all[i]) {
			kept = append(kept, all[i])
		}
	}
	return kept
}
