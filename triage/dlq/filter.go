package dlq

import (
	"fmt"
	"strings"
	"time"

	"github.com/agentdlq/agentdlq/triage/internal/filtering"
)

// Filter narrows the dead letters a report, a plan or a selective redrive
// looks at, by what a dead letter's metadata says of it. Every field is
// optional; the zero Filter matches every letter. A letter matches when it
// matches every field given.
//
// The CLI and the console only parse their flags or URL into a Filter
// (triage.ParseFilter); its matching lives here, once.
type Filter struct {
	// Tool is the task's tool, exactly (dlq_meta's tool, else the body's).
	Tool string `json:"tool,omitempty"`
	// Tenant is the task's tenant, exactly, or its hashed form as reports
	// show it where the pipeline hashes tenants (triage.HashValue: "sha256:…").
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

// IsZero reports whether f matches every letter.
func (f Filter) IsZero() bool {
	return f.Tool == "" && f.Tenant == "" && f.Since.IsZero() && f.Until.IsZero() && f.Contains == ""
}

// Validate says what is wrong with f, or nil: a time window that is empty.
func (f Filter) Validate() error {
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return fmt.Errorf("%w: since %s is not before until %s", filtering.ErrBadFilter, f.Since.UTC().Format(time.RFC3339), f.Until.UTC().Format(time.RFC3339))
	}
	return nil
}

// Match reports whether the tagged letter t is one f chooses.
func (f Filter) Match(t *Tagged) bool {
	if f.Tool != "" && t.Hints.Tool != f.Tool {
		return false
	}
	if f.Tenant != "" && t.Hints.Tenant != f.Tenant && (t.Hints.Tenant == "" || filtering.HashValue(t.Hints.Tenant) != f.Tenant) {
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
