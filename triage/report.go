package triage

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/pipeline"
)

// reportVersion is the version of the report's JSON document (report_version).
// Fields are only added within a version; a removal or a change of meaning
// makes a new version.
const reportVersion = 1

// Caps on the lists a report carries, so that a deep DLQ makes a bounded report.
const (
	maxSampleIDs      = 5
	maxTenantsListed  = 20
	maxExpiringListed = 1000
	maxEntriesListed  = 1000
	// maxKeysListed bounds the idempotency keys an effect_unknown group lists.
	maxKeysListed       = 1000
	tenantFieldHashName = "tenant"
)

// Report is what triage found in one DLQ. Its JSON form is versioned by
// ReportVersion; package triage/render writes it for people (text,
// Markdown, HTML).
type Report struct {
	ReportVersion int       `json:"report_version"`
	Pipeline      string    `json:"pipeline"`
	Owner         string    `json:"owner"`
	Queue         string    `json:"queue,omitempty"`
	FIFO          bool      `json:"fifo"`
	GeneratedAt   time.Time `json:"generated_at"`
	// Complete is true when the scan saw every dead letter the DLQ held: the
	// counts are exact and the lists of letters and keys are whole. False
	// (added within version 1; a report without the field reads it from
	// scan.partial): the counts are a lower bound, and Scan says why
	// (partial_reason, partial_cause) and when a rerun may see everything
	// (retry_after_seconds). A command that must see every letter fails on it.
	Complete bool `json:"complete"`
	// Partial is true when the report does not cover the whole DLQ (Complete
	// is false) or another stage fell short (an export failed, the ledger
	// could not be read); PartialReasons say why.
	Partial        bool          `json:"partial"`
	PartialReasons []string      `json:"partial_reasons,omitempty"`
	Scan           ScanStats     `json:"scan"`
	Totals         Totals        `json:"totals"`
	Expiry         ExpirySummary `json:"expiry"`
	// Groups are ordered by reason (most messages first), then by count.
	Groups []Group `json:"groups"`
	// Attention lists what stands out: redrive loops, repeat keys, recurring
	// poison, unreadable metadata, expiry risk.
	Attention []string `json:"attention,omitempty"`
	// Unreadable lists messages whose metadata could not be read. They are
	// counted in the unclassified reason, never dropped.
	Unreadable []Entry `json:"unreadable"`
	// Skipped lists what a stage left out (a non-UTF-8 body not exported, ...).
	Skipped []Entry `json:"skipped"`
	// Export is the eval export's outcome, when one ran.
	Export *ExportResult `json:"export,omitempty"`
	// Filter is set when the report holds only the dead letters a Filter
	// chose (added within version 1): its counts are of those.
	Filter *Filtered `json:"filter,omitempty"`
	// Copies lists the dead letters the DLQ holds more than once (added
	// within version 1; see CopySet), by original message id, at most 1000
	// (Totals.CopiedLetters counts them all). Each is counted once.
	Copies []CopySet `json:"copies,omitempty"`
	// Written holds the keys of the report files Run kept (Config.Keep), JSON, Markdown
	// and HTML (not serialised:
	// the report cannot name its own file's hash).
	Written []string `json:"-"`

	copyLetters []*Tagged // the copies not counted, for Narrow; not serialised
}

// Totals sums the report.
type Totals struct {
	Messages   int `json:"messages"`
	Inferred   int `json:"inferred"`
	Unreadable int `json:"unreadable"`
	StaleMeta  int `json:"stale_meta"`
	// Untrusted counts letters whose dlq_reason/dlq_meta were not the
	// worker's (Tagged.Untrusted): tagged receive_limit.
	Untrusted             int           `json:"untrusted_evidence,omitempty"`
	Groups                int           `json:"groups"`
	RecurringPoisonGroups int           `json:"recurring_poison_groups"`
	RedriveLoop           int           `json:"redrive_loop"`
	RepeatKeys            int           `json:"repeat_keys"`
	ByReason              []ReasonTotal `json:"by_reason"`
	// Copies counts the extra copies of dead letters the DLQ holds more
	// than once (CopySet), which no other count includes; CopiedLetters the
	// dead letters that have them (added within version 1). The DLQ holds
	// Messages + Copies letters.
	Copies        int `json:"copies,omitempty"`
	CopiedLetters int `json:"copied_letters,omitempty"`
	// CopiesDiffering counts the copies whose message attributes differ
	// from the counted letter's (CopySet.DifferingMessageIDs).
	CopiesDiffering int `json:"copies_differing,omitempty"`
}

// ReasonTotal is one reason's line.
type ReasonTotal struct {
	Reason           deadletter.Reason     `json:"reason"`
	Class            deadletter.Class      `json:"class"`
	Count            int                   `json:"count"`
	Inferred         int                   `json:"inferred"`
	Groups           int                   `json:"groups"`
	OldestAgeSeconds int64                 `json:"oldest_age_seconds"`
	SoonestExpiry    time.Time             `json:"soonest_expiry"`
	ExpiringSoon     int                   `json:"expiring_soon"`
	NextAction       deadletter.NextAction `json:"next_action"`
	Redrivable       deadletter.Redrivable `json:"redrivable"`
}

// Group is the dead letters of one reason and one fingerprint.
type Group struct {
	Reason        deadletter.Reason `json:"reason"`
	Class         deadletter.Class  `json:"class"`
	Fingerprint   string            `json:"fingerprint"`
	Tool          string            `json:"tool,omitempty"`
	ToolVersion   string            `json:"tool_version,omitempty"`
	SchemaVersion int               `json:"schema_version,omitempty"`
	// Signature is the normalised error signature.
	Signature string `json:"error_signature,omitempty"`
	Count     int    `json:"count"`
	// Inferred counts messages whose reason was inferred, not written by the worker.
	Inferred int `json:"inferred"`
	// FirstSeen and LastSeen are the earliest and latest dead-letter times
	// (dlq_meta's dead_lettered_at, else SentTimestamp).
	FirstSeen        time.Time `json:"first_seen"`
	LastSeen         time.Time `json:"last_seen"`
	OldestAgeSeconds int64     `json:"oldest_age_seconds"`
	SoonestExpiry    time.Time `json:"soonest_expiry"`
	ExpiringSoon     int       `json:"expiring_soon"`
	// TenantsAffected counts distinct tenants. Tenants lists up to 20 of them,
	// hashed ("sha256:…") when the pipeline's eval.hash_fields names "tenant".
	TenantsAffected int                   `json:"tenants_affected"`
	Tenants         []string              `json:"tenants,omitempty"`
	NextAction      deadletter.NextAction `json:"next_action"`
	Redrivable      deadletter.Redrivable `json:"redrivable"`
	// RedriveLoop counts messages that are redrive_loop or whose key was
	// redriven at least the pipeline's redrive_loop_after times.
	RedriveLoop int `json:"redrive_loop"`
	// RepeatKeys counts idempotency keys seen more than once in the DLQ, or
	// dead-lettered or redriven before (dlq_meta redrive_count, ledger counts).
	RepeatKeys         int `json:"repeat_keys"`
	MaxRedriveCount    int `json:"max_redrive_count"`
	MaxDeadLetterCount int `json:"max_dead_letter_count"`
	// Recurring is true for poison and unclassified groups of at least the
	// pipeline's eval.threshold messages: the eval export's candidates.
	Recurring        bool     `json:"recurring"`
	SampleMessageIDs []string `json:"sample_message_ids"`
	// IdempotencyKeys lists, for an effect_unknown or idempotency_key_reused
	// group only, the distinct idempotency keys of its dead letters, sorted,
	// at most maxKeysListed (IdempotencyKeysOmitted counts the rest). Each
	// effect_unknown key must be reconciled in the ledger (its entry read,
	// its outcome recorded) before a redrive; a reused key's ledger entry
	// names the task that holds it, and so the producer to fix.
	IdempotencyKeys        []string `json:"idempotency_keys,omitempty"`
	IdempotencyKeysOmitted int      `json:"idempotency_keys_omitted,omitempty"`

	tagged []*Tagged // the members, for the eval export; not serialised
}

// ExportResult is the export's outcome as the report carries it.
type ExportResult struct {
	Destination     string `json:"destination"`
	RecordsKey      string `json:"records_key,omitempty"`
	ManifestKey     string `json:"manifest_key,omitempty"`
	Candidates      int    `json:"candidates"`
	Exported        int    `json:"exported"`
	AlreadyExported int    `json:"already_exported"`
	// IDs are the ids exported (all of them; the manifest lists them too).
	// The report's JSON carries the first 20 as sample_ids.
	IDs       []string `json:"-"`
	SampleIDs []string `json:"sample_ids"`
	Error     string   `json:"error,omitempty"`
}

// SHA256 is the hex SHA-256 of the report's JSON without its export
// section: the eval export's manifest names the report by it, and a kept
// report's key carries its start (ReportBase).
func (r *Report) SHA256() string {
	c := *r
	c.Export = nil
	data, _ := json.Marshal(&c) // a Report always encodes
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// ExpirySummary is the retention risk of the whole DLQ.
type ExpirySummary struct {
	// DLQRetentionHours is the pipeline definition's; DLQRetentionSeconds is
	// the retention the expiry was computed with, from RetentionSource:
	// "queue" (its MessageRetentionPeriod, as the scan read it) or "pipeline".
	DLQRetentionHours   int    `json:"dlq_retention_hours"`
	DLQRetentionSeconds int64  `json:"dlq_retention_seconds"`
	RetentionSource     string `json:"retention_source"`
	WarningHours        int    `json:"warning_hours"`
	// SoonestExpiry is the earliest deletion time (zero for an empty DLQ).
	SoonestExpiry    time.Time `json:"soonest_expiry"`
	SoonestMessageID string    `json:"soonest_message_id,omitempty"`
	HoursToSoonest   *float64  `json:"hours_to_soonest,omitempty"`
	ExpiringSoon     int       `json:"expiring_soon"`
	OldestAgeSeconds int64     `json:"oldest_age_seconds"`
	// ByBasis counts messages by the clock their expiry ran from.
	ByBasis map[ClockBasis]int `json:"by_basis"`
	// Expiring lists the messages deleted within the warning window, soonest
	// first (at most 1000; ExpiringTruncated says when more were left out).
	Expiring          []ExpiringMessage `json:"expiring"`
	ExpiringTruncated bool              `json:"expiring_truncated,omitempty"`
}

// ExpiringMessage is one dead letter inside the warning window.
type ExpiringMessage struct {
	MessageID   string            `json:"message_id"`
	Reason      deadletter.Reason `json:"reason"`
	Fingerprint string            `json:"fingerprint"`
	DeletesAt   time.Time         `json:"deletes_at"`
	Basis       ClockBasis        `json:"basis"`
}

// Entry is one message a stage could not fully handle.
type Entry struct {
	MessageID string            `json:"message_id"`
	Stage     string            `json:"stage"` // "tag", "export"
	Reason    deadletter.Reason `json:"reason,omitempty"`
	Problem   string            `json:"problem"`
}

// Build groups tagged dead letters into a report as of now, with the DLQ
// retention and queue type of the pipeline definition. It is pure: the scan
// statistics, queue and export are filled in by the caller.
func Build(tagged []Tagged, p *pipeline.Pipeline, now time.Time) *Report {
	return buildWith(tagged, p, now, buildOptions{})
}

// buildOptions are what the queue itself says, where it differs from the
// pipeline definition. Zero fields mean "as the pipeline says".
type buildOptions struct {
	// Retention is the DLQ's MessageRetentionPeriod as the queue reports it:
	// SQS deletes by the queue's attribute, not by the definition.
	Retention time.Duration
	// FIFO is true when the queue is a FIFO queue (FifoQueue, or a .fifo name).
	FIFO bool
}

// buildWith is Build with the queue's own retention and type.
func buildWith(tagged []Tagged, p *pipeline.Pipeline, now time.Time, o buildOptions) *Report {
	now = now.UTC()
	retention, source := p.DLQRetention(), "pipeline"
	if o.Retention > 0 {
		retention, source = o.Retention, "queue"
	}
	fifo := p.FIFO || o.FIFO
	window := time.Duration(p.Triage.WarningHours) * time.Hour
	hashTenants := slices.Contains(p.Eval.HashFields, tenantFieldHashName)

	r := &Report{
		ReportVersion: reportVersion, Pipeline: p.Name, Owner: p.Owner, FIFO: fifo, GeneratedAt: now, Complete: true,
		Expiry: ExpirySummary{
			DLQRetentionHours: p.DLQRetentionHours, DLQRetentionSeconds: int64(retention / time.Second), RetentionSource: source,
			WarningHours: p.Triage.WarningHours,
			ByBasis:      map[ClockBasis]int{}, Expiring: []ExpiringMessage{},
		},
		Groups: []Group{}, Unreadable: []Entry{}, Skipped: []Entry{},
	}

	type groupAcc struct {
		g       *Group
		tenants map[string]bool
		keys    map[string]int
		repeat  map[string]bool
	}
	groups := map[string]*groupAcc{} // by reason + fingerprint
	var order []*groupAcc
	// Copies of one dead letter count once: only the one findCopies keeps
	// is counted, anywhere.
	isCopy, sets := findCopies(tagged)
	for _, s := range sets {
		r.Totals.Copies += len(s.CopyMessageIDs)
		r.Totals.CopiesDiffering += len(s.DifferingMessageIDs)
	}
	r.Totals.CopiedLetters = len(sets)
	if len(sets) > maxCopySetsListed {
		sets = sets[:maxCopySetsListed]
	}
	r.Copies = sets
	keyCount := map[string]int{} // idempotency key -> messages in this DLQ
	for i := range tagged {
		if k := tagged[i].Hints.IdempotencyKey; k != "" && !isCopy[i] {
			keyCount[k]++
		}
	}

	for i := range tagged {
		t := &tagged[i]
		if isCopy[i] {
			r.copyLetters = append(r.copyLetters, t)
			continue
		}
		exp := ExpiryOf(t, fifo, retention, now)
		age := int64(now.Sub(exp.ClockStart) / time.Second)
		if age < 0 {
			age = 0
		}
		r.Totals.Messages++
		if t.Inferred {
			r.Totals.Inferred++
		}
		r.Expiry.ByBasis[exp.Basis]++
		if age > r.Expiry.OldestAgeSeconds {
			r.Expiry.OldestAgeSeconds = age
		}
		if r.Expiry.SoonestExpiry.IsZero() || exp.DeletesAt.Before(r.Expiry.SoonestExpiry) ||
			(exp.DeletesAt.Equal(r.Expiry.SoonestExpiry) && t.MessageID < r.Expiry.SoonestMessageID) {
			r.Expiry.SoonestExpiry, r.Expiry.SoonestMessageID = exp.DeletesAt.UTC(), t.MessageID
		}
		soon := exp.DeletesAt.Sub(now) <= window
		if soon {
			r.Expiry.ExpiringSoon++
			r.Expiry.Expiring = append(r.Expiry.Expiring, ExpiringMessage{
				MessageID: t.MessageID, Reason: t.Reason, Fingerprint: t.Fingerprint, DeletesAt: exp.DeletesAt.UTC(), Basis: exp.Basis,
			})
		}
		if t.StaleMeta {
			r.Totals.StaleMeta++
		}
		if t.Untrusted != "" {
			r.Totals.Untrusted++
		}
		if t.MetaErr != nil {
			r.Totals.Unreadable++
			r.Unreadable = append(r.Unreadable, Entry{MessageID: t.MessageID, Stage: "tag", Reason: t.Reason, Problem: t.MetaErr.Error()})
		}
		if t.BodyErr != nil {
			r.Skipped = append(r.Skipped, Entry{MessageID: t.MessageID, Stage: "tag", Reason: t.Reason, Problem: t.BodyErr.Error() + ": tagged from its attributes only; not exported"})
		}

		id := string(t.Reason) + "/" + t.Fingerprint
		acc := groups[id]
		if acc == nil {
			info, _ := t.Reason.Info()
			acc = &groupAcc{
				g: &Group{
					Reason: t.Reason, Class: info.Class, Fingerprint: t.Fingerprint,
					Tool: t.Hints.Tool, ToolVersion: t.Hints.ToolVersion, SchemaVersion: t.Hints.SchemaVersion,
					Signature: t.Signature, NextAction: info.Next, Redrivable: info.Redrivable,
					FirstSeen: t.DeadLetteredAt.UTC(), LastSeen: t.DeadLetteredAt.UTC(), SoonestExpiry: exp.DeletesAt.UTC(),
					SampleMessageIDs: []string{},
				},
				tenants: map[string]bool{}, keys: map[string]int{}, repeat: map[string]bool{},
			}
			groups[id] = acc
			order = append(order, acc)
		}
		g := acc.g
		g.Count++
		g.tagged = append(g.tagged, t)
		if t.Inferred {
			g.Inferred++
		}
		if t.DeadLetteredAt.Before(g.FirstSeen) {
			g.FirstSeen = t.DeadLetteredAt.UTC()
		}
		if t.DeadLetteredAt.After(g.LastSeen) {
			g.LastSeen = t.DeadLetteredAt.UTC()
		}
		if age > g.OldestAgeSeconds {
			g.OldestAgeSeconds = age
		}
		if exp.DeletesAt.Before(g.SoonestExpiry) {
			g.SoonestExpiry = exp.DeletesAt.UTC()
		}
		if soon {
			g.ExpiringSoon++
		}
		if tn := t.Hints.Tenant; tn != "" {
			acc.tenants[tn] = true
		}
		if len(g.SampleMessageIDs) < maxSampleIDs {
			g.SampleMessageIDs = append(g.SampleMessageIDs, t.MessageID)
		}
		// Loops and repeats: dlq_meta's redrive count, the ledger's counts.
		redrives, deadLetters := 0, 0
		if t.Meta != nil {
			redrives = t.Meta.RedriveCount
		}
		if t.Ledger != nil {
			redrives = max(redrives, t.Ledger.RedriveCount)
			deadLetters = t.Ledger.DeadLetterCount
		}
		g.MaxRedriveCount = max(g.MaxRedriveCount, redrives)
		g.MaxDeadLetterCount = max(g.MaxDeadLetterCount, deadLetters)
		if t.Reason == deadletter.ReasonRedriveLoop || redrives >= p.RedriveLoopAfter {
			g.RedriveLoop++
			r.Totals.RedriveLoop++
		}
		if k := t.Hints.IdempotencyKey; k != "" && (keyCount[k] > 1 || redrives > 0 || deadLetters > 1) {
			acc.repeat[k] = true
		}
	}

	sort.SliceStable(r.Expiry.Expiring, func(i, j int) bool {
		a, b := r.Expiry.Expiring[i], r.Expiry.Expiring[j]
		if !a.DeletesAt.Equal(b.DeletesAt) {
			return a.DeletesAt.Before(b.DeletesAt)
		}
		return a.MessageID < b.MessageID
	})
	if len(r.Expiry.Expiring) > maxExpiringListed {
		r.Expiry.Expiring, r.Expiry.ExpiringTruncated = r.Expiry.Expiring[:maxExpiringListed], true
	}
	if r.Totals.Messages > 0 {
		h := r.Expiry.SoonestExpiry.Sub(now).Hours()
		r.Expiry.HoursToSoonest = &h
	}
	r.Unreadable = capEntries(r.Unreadable)
	r.Skipped = capEntries(r.Skipped)

	// Reasons, most messages first (taxonomy order breaks ties); groups
	// inside a reason, most messages first (fingerprint breaks ties).
	byReason := map[deadletter.Reason]*ReasonTotal{}
	repeatKeys := map[string]bool{}
	for _, acc := range order {
		g := acc.g
		g.TenantsAffected = len(acc.tenants)
		g.Tenants = tenantList(acc.tenants, hashTenants)
		g.RepeatKeys = len(acc.repeat)
		if g.Reason == deadletter.ReasonEffectUnknown || g.Reason == deadletter.ReasonIdempotencyKeyReused {
			g.IdempotencyKeys, g.IdempotencyKeysOmitted = keyList(g.tagged)
		}
		for k := range acc.repeat {
			repeatKeys[k] = true
		}
		g.Recurring = recurringClass(g.Reason) && g.Count >= p.Eval.Threshold
		rt := byReason[g.Reason]
		if rt == nil {
			rt = &ReasonTotal{Reason: g.Reason, Class: g.Class, NextAction: g.NextAction, Redrivable: g.Redrivable, SoonestExpiry: g.SoonestExpiry}
			byReason[g.Reason] = rt
		}
		rt.Count += g.Count
		rt.Inferred += g.Inferred
		rt.Groups++
		rt.ExpiringSoon += g.ExpiringSoon
		rt.OldestAgeSeconds = max(rt.OldestAgeSeconds, g.OldestAgeSeconds)
		if g.SoonestExpiry.Before(rt.SoonestExpiry) {
			rt.SoonestExpiry = g.SoonestExpiry
		}
	}
	r.Totals.RepeatKeys = len(repeatKeys)
	rank := map[deadletter.Reason]int{}
	for i, reason := range deadletter.AllReasons() {
		rank[reason] = i
	}
	for _, rt := range byReason {
		r.Totals.ByReason = append(r.Totals.ByReason, *rt)
	}
	sort.Slice(r.Totals.ByReason, func(i, j int) bool {
		a, b := r.Totals.ByReason[i], r.Totals.ByReason[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		return rank[a.Reason] < rank[b.Reason]
	})
	if r.Totals.ByReason == nil {
		r.Totals.ByReason = []ReasonTotal{}
	}
	reasonPos := map[deadletter.Reason]int{}
	for i, rt := range r.Totals.ByReason {
		reasonPos[rt.Reason] = i
	}
	for _, acc := range order {
		r.Groups = append(r.Groups, *acc.g)
	}
	sort.SliceStable(r.Groups, func(i, j int) bool {
		a, b := r.Groups[i], r.Groups[j]
		if a.Reason != b.Reason {
			return reasonPos[a.Reason] < reasonPos[b.Reason]
		}
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		return a.Fingerprint < b.Fingerprint
	})
	r.Totals.Groups = len(r.Groups)
	for _, g := range r.Groups {
		if g.Recurring {
			r.Totals.RecurringPoisonGroups++
		}
	}
	r.Attention = attention(r, p)
	return r
}

// recurringClass says whether a reason's groups are eval-export candidates:
// poison, and unclassified (an error nobody classified yet).
func recurringClass(reason deadletter.Reason) bool {
	return reason.Class() == deadletter.ClassPoison || reason == deadletter.ReasonUnclassified
}

func tenantList(set map[string]bool, hashed bool) []string {
	out := make([]string, 0, len(set))
	for tn := range set {
		if hashed {
			tn = HashValue(tn)
		}
		out = append(out, tn)
	}
	sort.Strings(out)
	if len(out) > maxTenantsListed {
		out = out[:maxTenantsListed]
	}
	return out
}

// HashValue is how triage hashes a value it must not show: "sha256:" and the
// first 16 hex digits of the SHA-256 of the value.
func HashValue(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])[:16]
}

func capEntries(es []Entry) []Entry {
	if len(es) > maxEntriesListed {
		return es[:maxEntriesListed]
	}
	return es
}

// attention lists what an operator must not miss, most urgent first.
func attention(r *Report, p *pipeline.Pipeline) []string {
	var out []string
	if e := r.Expiry; e.RetentionSource == "queue" && e.DLQRetentionSeconds != int64(e.DLQRetentionHours)*3600 {
		out = append(out, fmt.Sprintf("the DLQ's retention is %s, the pipeline definition says %dh: expiry follows the queue; fix one of them",
			time.Duration(e.DLQRetentionSeconds)*time.Second, e.DLQRetentionHours))
	}
	if r.Totals.RedriveLoop > 0 {
		out = append(out, plural(r.Totals.RedriveLoop, "message")+" in a redrive loop (redrive_loop, or redriven at least "+itoa(p.RedriveLoopAfter)+" times): reject, do not redrive")
	}
	if r.Totals.RepeatKeys > 0 {
		out = append(out, plural(r.Totals.RepeatKeys, "idempotency key")+" dead-lettered more than once")
	}
	if r.Expiry.ExpiringSoon > 0 {
		out = append(out, plural(r.Expiry.ExpiringSoon, "message")+" deleted by retention within "+itoa(p.Triage.WarningHours)+"h (soonest "+r.Expiry.SoonestExpiry.Format(time.RFC3339)+")")
	}
	if r.Totals.RecurringPoisonGroups > 0 {
		out = append(out, plural(r.Totals.RecurringPoisonGroups, "recurring poison group")+" (at least "+itoa(p.Eval.Threshold)+" messages): export to evals, fix, then redrive")
	}
	if r.Totals.StaleMeta > 0 {
		out = append(out, plural(r.Totals.StaleMeta, "message")+" enqueued well after their dlq_meta was written: redriven with their attributes and moved back by the broker (a crash, timeout or OOM on the redrive?)")
	}
	if r.Totals.Untrusted > 0 {
		out = append(out, plural(r.Totals.Untrusted, "message")+" carry dlq_reason/dlq_meta the worker did not write (the broker moved them, or another principal sent them): shown as receive_limit, as SQS knows them; never redriven on that evidence")
	}
	if r.Totals.Unreadable > 0 {
		out = append(out, plural(r.Totals.Unreadable, "message")+" with unreadable dlq_meta, counted as unclassified")
	}
	for _, rt := range r.Totals.ByReason {
		if rt.Reason == deadletter.ReasonIdempotencyKeyReused {
			out = append(out, plural(rt.Count, "message")+" idempotency_key_reused: a producer reused a key for other args, or the args were changed after the key was issued; none ran. "+
				"Look up each key in the ledger (the task that holds it), fix the producer, then reject them (a redrive meets the same digest and is dead-lettered again)")
		}
		if rt.Reason == deadletter.ReasonEffectUnknown {
			out = append(out, plural(rt.Count, "message")+" effect_unknown: reconcile the external effect of each key in the ledger before anything else (the keys are in the group's idempotency_keys)")
		}
	}
	if line := copiesAttention(r); line != "" {
		out = append(out, line)
	}
	return out
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "y") && !strings.HasSuffix(noun, "ey") {
		return itoa(n) + " " + noun[:len(noun)-1] + "ies"
	}
	return itoa(n) + " " + noun + "s"
}

func itoa(n int) string { return strconv.Itoa(n) }

// Letters returns the group's dead letters as the triage run that built the
// report tagged them. Only a report built in this process has them (Build,
// Run); a report read back from JSON has none.
func (g *Group) Letters() []*Tagged { return g.tagged }

// keyList is the distinct idempotency keys of a group's members, sorted,
// at most maxKeysListed, and how many more there are.
func keyList(members []*Tagged) ([]string, int) {
	seen := map[string]bool{}
	var keys []string
	for _, t := range members {
		if k := t.Hints.IdempotencyKey; k != "" && !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if len(keys) > maxKeysListed {
		return keys[:maxKeysListed], len(keys) - maxKeysListed
	}
	return keys, 0
}
