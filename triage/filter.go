package triage

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentdlq/agentdlq/pipeline"
)

// Filter narrows the dead letters a report, a plan or a selective redrive
// looks at, by what a dead letter's metadata says of it. Every field is
// optional; the zero Filter matches every letter. A letter matches when it
// matches every field given.
//
// The CLI and the console only parse their flags or URL into a Filter
// (ParseFilter); its matching lives here, once.
type Filter struct {
	// Tool is the task's tool, exactly (dlq_meta's tool, else the body's).
	Tool string `json:"tool,omitempty"`
	// Tenant is the task's tenant, exactly, or its hashed form as reports
	// show it where the pipeline hashes tenants (HashValue: "sha256:…").
	Tenant string `json:"tenant,omitempty"`
	// Since and Until bound when the letter was dead-lettered
	// (Tagged.DeadLetteredAt): Since <= t < Until. A letter whose time is
	// unknown matches neither bound.
	Since time.Time `json:"since,omitzero"`
	Until time.Time `json:"until,omitzero"`
	// Contains is text the letter's error must hold, case-insensitively:
	// the error code, the redacted error, the error signature or, for
	// unreadable metadata, why it could not be read.
	Contains string `json:"contains,omitempty"`
}

// errBadFilter wraps every error of ParseFilter and Filter.Validate.
var errBadFilter = errors.New("bad filter")

// IsZero reports whether f matches every letter.
func (f Filter) IsZero() bool {
	return f.Tool == "" && f.Tenant == "" && f.Since.IsZero() && f.Until.IsZero() && f.Contains == ""
}

// Validate says what is wrong with f, or nil: a time window that is empty.
func (f Filter) Validate() error {
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return fmt.Errorf("%w: since %s is not before until %s", errBadFilter, f.Since.UTC().Format(time.RFC3339), f.Until.UTC().Format(time.RFC3339))
	}
	return nil
}

// Match reports whether the tagged letter t is one f chooses.
func (f Filter) Match(t *Tagged) bool {
	if f.Tool != "" && t.Hints.Tool != f.Tool {
		return false
	}
	if f.Tenant != "" && t.Hints.Tenant != f.Tenant && (t.Hints.Tenant == "" || HashValue(t.Hints.Tenant) != f.Tenant) {
		return false
	}
	if !f.Since.IsZero() || !f.Until.IsZero() {
		at := t.DeadLetteredAt
		if at.IsZero() || (!f.Since.IsZero() && at.Before(f.Since)) || (!f.Until.IsZero() && !at.Before(f.Until)) {
			return false
		}
	}
	if f.Contains != "" {
		return t.errorContains(strings.ToLower(f.Contains))
	}
	return true
}

// errorContains reports whether the letter's error holds lower (lower case).
func (t *Tagged) errorContains(lower string) bool {
	texts := []string{t.Signature}
	if t.Meta != nil {
		texts = append(texts, t.Meta.ErrorCode, t.Meta.Error)
	}
	if t.MetaErr != nil {
		texts = append(texts, t.MetaErr.Error())
	}
	for _, s := range texts {
		if s != "" && strings.Contains(strings.ToLower(s), lower) {
			return true
		}
	}
	return false
}

// Fields are f's fields that are set, by the names the CLI's flags and the
// console's URL use (tool, tenant, since, until, contains), times in RFC
// 3339: what an audit record names and a link keeps.
func (f Filter) Fields() map[string]string {
	out := map[string]string{}
	if f.Tool != "" {
		out["tool"] = f.Tool
	}
	if f.Tenant != "" {
		out["tenant"] = f.Tenant
	}
	if !f.Since.IsZero() {
		out["since"] = f.Since.UTC().Format(time.RFC3339)
	}
	if !f.Until.IsZero() {
		out["until"] = f.Until.UTC().Format(time.RFC3339)
	}
	if f.Contains != "" {
		out["contains"] = f.Contains
	}
	return out
}

// FilterFields are the names of Filter's fields as the CLI's flags, the
// console's URL and the audit records spell them (Fields' keys), in the
// order a filter is written: String, a command line's flags, the console's
// form.
var FilterFields = []string{"tool", "tenant", "since", "until", "contains"}

// FilterFieldError is ParseFilter's error for a field's value that does not
// parse (a bad since or until): Field is one of FilterFields, so that a
// caller can name its own flag or parameter without reading the message.
type FilterFieldError struct {
	Field string
	Err   error
}

func (e *FilterFieldError) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *FilterFieldError) Unwrap() error { return e.Err }

// String is f as one line, "tool=web.search since=2026-12-02T08:00:00Z"
// (values with a space or a quote quoted); "" for the zero Filter.
func (f Filter) String() string {
	fs := f.Fields()
	var parts []string
	for _, k := range FilterFields {
		v, ok := fs[k]
		if !ok {
			continue
		}
		if strings.ContainsAny(v, " \t\"=") || v == "" {
			v = fmt.Sprintf("%q", v)
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, " ")
}

// ParseFilter builds a Filter from text, as flags and URLs carry it: tool,
// tenant and contains as they are (trimmed), since and until as RFC 3339
// times or as durations ago ("2h", "90m", "7d": that long before now).
// Empty strings leave a field unset.
func ParseFilter(tool, tenant, since, until, contains string, now time.Time) (Filter, error) {
	f := Filter{Tool: strings.TrimSpace(tool), Tenant: strings.TrimSpace(tenant), Contains: strings.TrimSpace(contains)}
	var err error
	if f.Since, err = parseWhen(since, now); err != nil {
		return Filter{}, &FilterFieldError{Field: "since", Err: err}
	}
	if f.Until, err = parseWhen(until, now); err != nil {
		return Filter{}, &FilterFieldError{Field: "until", Err: err}
	}
	if err := f.Validate(); err != nil {
		return Filter{}, err
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
		return time.Time{}, fmt.Errorf("%w: %q is neither an RFC 3339 time (2026-12-02T08:00:00Z) nor a duration ago (2h, 90m, 7d)", errBadFilter, s)
	}
	if d <= 0 {
		return time.Time{}, fmt.Errorf("%w: %q: a duration ago must be positive", errBadFilter, s)
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

// Filtered says that a report holds only the dead letters a Filter chose
// (Report.Filter): its counts, groups and lists are of those, not of the
// DLQ. A filtered report is never kept beside the DLQ's reports (its chart
// would draw a drop) nor exported from.
type Filtered struct {
	Filter
	// Scanned counts the letters the scan saw; Matched those the filter chose.
	Scanned int `json:"scanned"`
	Matched int `json:"matched"`
}

// Summary is the filter as a report's header says it: the filter and
// how many of the letters seen it chose.
func (fd *Filtered) Summary() string {
	return fmt.Sprintf("%s: %d of %d dead letters seen", fd.Filter.String(), fd.Matched, fd.Scanned)
}

// errNoLetters is Narrow's error for a report read back from storage: it
// holds counts and groups, not the letters a filter needs.
var errNoLetters = errors.New("the report holds no letters (it was read back from storage): filtering needs a fresh scan")

// Narrow returns the report of the letters of r that f chooses: the same
// scan, rebuilt from the letters it holds (a report from Run; one read back
// from storage holds none: errNoLetters), as of r's own time. The zero
// Filter returns r. Narrow never changes r.
func Narrow(r *Report, p *pipeline.Pipeline, f Filter) (*Report, error) {
	if r == nil || f.IsZero() {
		return r, nil
	}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	all := make([]Tagged, 0, r.Totals.Messages)
	for i := range r.Groups {
		for _, t := range r.Groups[i].tagged {
			all = append(all, *t)
		}
	}
	if len(all) < r.Totals.Messages {
		return nil, errNoLetters
	}
	for _, t := range r.copyLetters {
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
func narrowed(all []Tagged, p *pipeline.Pipeline, now time.Time, o buildOptions, f Filter, base *Report) *Report {
	kept := filterTagged(all, f)
	r := buildWith(kept, p, now, o)
	r.Filter = &Filtered{Filter: f, Scanned: len(all), Matched: len(kept)}
	if base != nil {
		r.Queue, r.Scan, r.Complete, r.Partial = base.Queue, base.Scan, base.Complete, base.Partial
		r.PartialReasons = append([]string(nil), base.PartialReasons...)
	}
	return r
}

// filterTagged returns the letters of all that f chooses (all itself for
// the zero Filter).
func filterTagged(all []Tagged, f Filter) []Tagged {
	if f.IsZero() {
		return all
	}
	kept := make([]Tagged, 0, len(all))
	for i := range all {
		if f.Match(&all[i]) {
			kept = append(kept, all[i])
		}
	}
	return kept
}
