// Package report holds the read model triage builds: the Report of one
// DLQ and its parts (Totals, Group, ExpirySummary, ScanStats …); the dead
// letters it is built from and the Filter that narrows them are
// triage/dlq's. Its types are plain data with a stable JSON form
// (triage/report.schema.json); package triage scans, tags and builds them,
// package triage/render writes them for people, and redrive, the console,
// the eval export and the Lambda read them. It imports no AWS SDK and
// nothing of triage.
package report

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/triage/dlq"
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
	// scan.partial): the counts are a lower bound, and triage.Scan says why
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
	// Tenants break the letters down by tenant, most letters first, at
	// most 50 (TenantsOmitted counts the rest). Added within version 1.
	Tenants        []TenantTotal `json:"tenants"`
	TenantsOmitted int           `json:"tenants_omitted,omitempty"`
	// SLO is the pipeline's dead-letter objective and the period's error
	// budget spent (SLOStatus). Added within version 1.
	SLO *SLOStatus `json:"slo,omitempty"`
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
	Filter *dlq.Filtered `json:"filter,omitempty"`
	// Copies lists the dead letters the DLQ holds more than once (added
	// within version 1; see CopySet), by original message id, at most 1000
	// (Totals.CopiedLetters counts them all). Each is counted once.
	Copies []CopySet `json:"copies,omitempty"`
	// Written holds the keys of the report files triage.Run kept (triage.Config.Keep), JSON, Markdown
	// and HTML (not serialised:
	// the report cannot name its own file's hash).
	Written []string `json:"-"`
	// CopyLetters are the copies the report does not count (not
	// serialised), for triage.Narrow to leave out as well.
	CopyLetters []*dlq.Tagged `json:"-"`
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

	// Letters are the group's dead letters as the triage run that built the
	// report tagged them. Only a report built in this process has them
	// (triage.Build, triage.Run); a report read back from JSON has none.
	Letters []*dlq.Tagged `json:"-"`
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
// report's key carries its start (triage.ReportBase).
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

// CopySet is one dead letter that the DLQ holds more than once: the
// worker's SendMessageBatch reached SQS, its response was lost, and the
// worker (or its SDK's retry) sent the same dead letter again. Copies are
// letters with readable dlq_meta naming the same original message id
// (dlq_meta's message_id), the same input digest (dlq_meta's
// input_sha256) and a body of the same SHA-256. The report counts the
// dead letter once: MessageID is the copy it counts (the earliest
// SentTimestamp, then the smallest message id), CopyMessageIDs the others,
// which no total, group, expiry, metric or eval candidate counts.
// DifferingMessageIDs are those of them whose message attributes
// (dlq_meta, dlq_reason, the kept originals) are not byte for byte the
// counted one's: the message was dead-lettered again on another receive
// (its own attempts, times or error), not sent twice. A selective redrive
// deletes only the identical copies; it moves these as letters of their
// own.
type CopySet struct {
	OriginalMessageID   string   `json:"original_message_id"`
	MessageID           string   `json:"message_id"`
	CopyMessageIDs      []string `json:"copy_message_ids"`
	DifferingMessageIDs []string `json:"differing_message_ids,omitempty"`
}
