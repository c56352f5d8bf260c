package triage

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/triage/dlq"
	"github.com/agentdlq/agentdlq/triage/internal/filtering"
	"github.com/agentdlq/agentdlq/triage/report"
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

// Build groups tagged dead letters into a report as of now, with the DLQ
// retention and queue type of the pipeline definition. It is pure: the scan
// statistics, queue and export are filled in by the caller.
func Build(tagged []dlq.Tagged, p *pipeline.Pipeline, now time.Time) *report.Report {
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
func buildWith(tagged []dlq.Tagged, p *pipeline.Pipeline, now time.Time, o buildOptions) *report.Report {
	b := newBuilder(p, now, o)
	r := b.r
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
	for i := range tagged {
		if k := tagged[i].Hints.IdempotencyKey; k != "" && !isCopy[i] {
			b.keyCount[k]++
		}
	}
	for i := range tagged {
		t := &tagged[i]
		if isCopy[i] {
			r.CopyLetters = append(r.CopyLetters, t)
			continue
		}
		exp := ExpiryOf(t, b.fifo, b.retention, b.now)
		age := max(int64(b.now.Sub(exp.ClockStart)/time.Second), 0)
		soon := exp.DeletesAt.Sub(b.now) <= b.window
		b.count(t, exp, age, soon)
		b.group(t, exp, age, soon)
	}
	b.finishExpiry()
	b.finishGroups()
	r.Tenants, r.TenantsOmitted = tenantTotals(b.tenants, r.Totals.Messages, b.now, b.hashTenants)
	r.SLO = sloStatus(tagged, p, b.now)
	r.Attention = attention(r, p)
	return r
}

// builder is a report being built, letter by letter.
type builder struct {
	r           *report.Report
	p           *pipeline.Pipeline
	now         time.Time
	fifo        bool
	retention   time.Duration
	window      time.Duration // the expiry warning window
	hashTenants bool
	groups      map[string]*groupAcc // by reason + fingerprint
	order       []*groupAcc          // the groups, in the order of their first letter
	tenants     map[string]*tenantAcc
	keyCount    map[string]int // idempotency key -> messages in this DLQ
}

// groupAcc is a group being built, with the sets its counts come from.
type groupAcc struct {
	g       *report.Group
	tenants map[string]bool
	keys    map[string]int
	repeat  map[string]bool
}

// newBuilder starts an empty report of p as of now.
func newBuilder(p *pipeline.Pipeline, now time.Time, o buildOptions) *builder {
	now = now.UTC()
	retention, source := p.DLQRetention(), "pipeline"
	if o.Retention > 0 {
		retention, source = o.Retention, "queue"
	}
	fifo := p.FIFO || o.FIFO
	r := &report.Report{
		ReportVersion: reportVersion, Pipeline: p.Name, Owner: p.Owner, FIFO: fifo, GeneratedAt: now, Complete: true,
		Expiry: report.ExpirySummary{
			DLQRetentionHours: p.DLQRetentionHours, DLQRetentionSeconds: int64(retention / time.Second), RetentionSource: source,
			WarningHours: p.Triage.WarningHours,
			ByBasis:      map[report.ClockBasis]int{}, Expiring: []report.ExpiringMessage{},
		},
		Groups: []report.Group{}, Unreadable: []report.Entry{}, Skipped: []report.Entry{},
	}
	return &builder{r: r, p: p, now: now, fifo: fifo, retention: retention,
		window:      time.Duration(p.Triage.WarningHours) * time.Hour,
		hashTenants: HashesTenants(p),
		groups:      map[string]*groupAcc{}, tenants: map[string]*tenantAcc{}, keyCount: map[string]int{}}
}

// count counts a letter in the report's totals and expiry summary, and
// lists what could not be read of it.
func (b *builder) count(t *dlq.Tagged, exp Expiry, age int64, soon bool) {
	r := b.r
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
	if soon {
		r.Expiry.ExpiringSoon++
		r.Expiry.Expiring = append(r.Expiry.Expiring, report.ExpiringMessage{
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
		r.Unreadable = append(r.Unreadable, report.Entry{MessageID: t.MessageID, Stage: "tag", Reason: t.Reason, Problem: t.MetaErr.Error()})
	}
	if t.BodyErr != nil {
		r.Skipped = append(r.Skipped, report.Entry{MessageID: t.MessageID, Stage: "tag", Reason: t.Reason, Problem: t.BodyErr.Error() + ": tagged from its attributes only; not exported"})
	}
}

// group adds a letter to its group (reason and fingerprint) and to its
// tenant's totals.
func (b *builder) group(t *dlq.Tagged, exp Expiry, age int64, soon bool) {
	id := string(t.Reason) + "/" + t.Fingerprint
	acc := b.groups[id]
	if acc == nil {
		info, _ := t.Reason.Info()
		acc = &groupAcc{
			g: &report.Group{
				Reason: t.Reason, Class: info.Class, Fingerprint: t.Fingerprint,
				Tool: t.Hints.Tool, ToolVersion: t.Hints.ToolVersion, SchemaVersion: t.Hints.SchemaVersion,
				Signature: t.Signature, NextAction: info.Next, Redrivable: info.Redrivable,
				FirstSeen: t.DeadLetteredAt.UTC(), LastSeen: t.DeadLetteredAt.UTC(), SoonestExpiry: exp.DeletesAt.UTC(),
				SampleMessageIDs: []string{},
			},
			tenants: map[string]bool{}, keys: map[string]int{}, repeat: map[string]bool{},
		}
		b.groups[id] = acc
		b.order = append(b.order, acc)
	}
	g := acc.g
	g.Count++
	g.Letters = append(g.Letters, t)
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
	ta := b.tenants[t.Hints.Tenant]
	if ta == nil {
		ta = &tenantAcc{byReason: map[deadletter.Reason]int{}}
		b.tenants[t.Hints.Tenant] = ta
	}
	ta.add(t, age)
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
	if t.Reason == deadletter.ReasonRedriveLoop || redrives >= b.p.RedriveLoopAfter {
		g.RedriveLoop++
		b.r.Totals.RedriveLoop++
	}
	if k := t.Hints.IdempotencyKey; k != "" && (b.keyCount[k] > 1 || redrives > 0 || deadLetters > 1) {
		acc.repeat[k] = true
	}
}

// finishExpiry sorts and caps the expiring letters and the lists of
// entries, and says the hours to the soonest expiry.
func (b *builder) finishExpiry() {
	r := b.r
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
		h := r.Expiry.SoonestExpiry.Sub(b.now).Hours()
		r.Expiry.HoursToSoonest = &h
	}
	r.Unreadable = capEntries(r.Unreadable)
	r.Skipped = capEntries(r.Skipped)
}

// finishGroups completes each group and totals them by reason: reasons,
// most messages first (taxonomy order breaks ties); groups inside a reason,
// most messages first (fingerprint breaks ties).
func (b *builder) finishGroups() {
	r := b.r
	byReason := map[deadletter.Reason]*report.ReasonTotal{}
	repeatKeys := map[string]bool{}
	for _, acc := range b.order {
		g := acc.g
		g.TenantsAffected = len(acc.tenants)
		g.Tenants = tenantList(acc.tenants, b.hashTenants)
		g.RepeatKeys = len(acc.repeat)
		if g.Reason == deadletter.ReasonEffectUnknown || g.Reason == deadletter.ReasonIdempotencyKeyReused {
			g.IdempotencyKeys, g.IdempotencyKeysOmitted = keyList(g.Letters)
		}
		for k := range acc.repeat {
			repeatKeys[k] = true
		}
		g.Recurring = recurringClass(g.Reason) && g.Count >= b.p.Eval.Threshold
		rt := byReason[g.Reason]
		if rt == nil {
			rt = &report.ReasonTotal{Reason: g.Reason, Class: g.Class, NextAction: g.NextAction, Redrivable: g.Redrivable, SoonestExpiry: g.SoonestExpiry}
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
		r.Totals.ByReason = []report.ReasonTotal{}
	}
	reasonPos := map[deadletter.Reason]int{}
	for i, rt := range r.Totals.ByReason {
		reasonPos[rt.Reason] = i
	}
	for _, acc := range b.order {
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
func HashValue(s string) string { return filtering.HashValue(s) }

// HashesTenants reports whether p's reports show tenants hashed (with
// HashValue): its eval.hash_fields names "tenant". Whatever shows a tenant
// beside a report asks this, so both name it alike.
func HashesTenants(p *pipeline.Pipeline) bool {
	return slices.Contains(p.Eval.HashFields, tenantFieldHashName)
}

func capEntries(es []report.Entry) []report.Entry {
	if len(es) > maxEntriesListed {
		return es[:maxEntriesListed]
	}
	return es
}

// attention lists what an operator must not miss, most urgent first.
func attention(r *report.Report, p *pipeline.Pipeline) []string {
	var out []string
	if e := r.Expiry; e.RetentionSource == "queue" && e.DLQRetentionSeconds != int64(e.DLQRetentionHours)*3600 {
		out = append(out, fmt.Sprintf("the DLQ's retention is %s, the pipeline definition says %dh: expiry follows the queue; fix one of them",
			time.Duration(e.DLQRetentionSeconds)*time.Second, e.DLQRetentionHours))
	}
	for _, t := range r.Tenants {
		if t.Dominant {
			out = append(out, dominantAttention(t))
		}
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

// keyList is the distinct idempotency keys of a group's members, sorted,
// at most maxKeysListed, and how many more there are.
func keyList(members []*dlq.Tagged) ([]string, int) {
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
