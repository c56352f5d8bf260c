package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"html/template"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/dlq"
	"github.com/agentdlq/agentdlq/triage/eval"
	"github.com/agentdlq/agentdlq/triage/render"
	"github.com/agentdlq/agentdlq/triage/report"
)

// page is what the layout renders around a page's own data.
type page struct {
	Title     string
	Nav       string // "overview", "pipeline", "audit"
	CSRF      string
	Pipelines []string
	P         *pipeline.Pipeline
	Now       time.Time
	// Refresh reloads the page after so many seconds (a job's progress): a
	// meta refresh, since the console runs no script.
	Refresh int
	Data    any
}

func (s *Server) render(w http.ResponseWriter, r *http.Request, code int, name string, pg page) {
	pg.CSRF = s.csrf
	pg.Now = s.cfg.Now()
	for _, p := range s.cfg.Pipelines {
		pg.Pipelines = append(pg.Pipelines, p.Name)
	}
	var b bytes.Buffer
	if err := s.tmpl.ExecuteTemplate(&b, name, pg); err != nil {
		s.log.ErrorContext(r.Context(), "console: render", "page", name, "error", err.Error())
		http.Error(w, "console: the page could not be rendered: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write(b.Bytes())
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request, msg string) {
	s.render(w, r, http.StatusNotFound, "message", page{Title: "Not found", Data: msg})
}

// ---- overview ----

type overviewRow struct {
	P                       *pipeline.Pipeline
	HotVisible, HotInFlight string
	DLQVisible, DLQInFlight string
	QueueErr                string
	// NotCreated is set when the pipeline's queues do not exist
	// (ErrQueuesNotFound, or SQS says so): Local says where.
	NotCreated, Local bool
	Report            *report.Report
	Refreshing        bool
	// Breakers are the pipeline's circuit breakers (read each time).
	Breakers *breakerView
}

// Stale is true when the DLQ's depth now differs from what the row's
// report counted: the overview marks the report older than the queue.
func (row overviewRow) Stale() bool {
	if row.Report == nil || row.NotCreated || row.QueueErr != "" {
		return false
	}
	vis, err1 := strconv.Atoi(row.DLQVisible)
	inf, err2 := strconv.Atoi(row.DLQInFlight)
	if err1 != nil || err2 != nil {
		return false
	}
	l := liveState{Known: true, Visible: vis, InFlight: inf, Counted: row.Report.Totals.Messages, Partial: !row.Report.Complete}
	return l.Stale()
}

// onThisMachine says, for the overview's words only ("not created locally"
// or "not deployed here"), whether the SQS client runs on this machine (its
// Options().BaseEndpoint on loopback). The redrive gate decides for itself
// (redrive.New), from every client.
func (s *Server) onThisMachine() bool {
	c, ok := s.cfg.SQS.(interface{ Options() sqs.Options })
	if !ok {
		return false
	}
	u, err := url.Parse(aws.ToString(c.Options().BaseEndpoint))
	if err != nil || u.Host == "" {
		return false
	}
	if strings.EqualFold(u.Hostname(), "localhost") {
		return true
	}
	ip := net.ParseIP(u.Hostname())
	return ip != nil && ip.IsLoopback()
}

// overview reads each pipeline's queue attributes (one GetQueueAttributes
// a queue, never a receive) and its latest report.
func (s *Server) overview(w http.ResponseWriter, r *http.Request) {
	rows := make([]overviewRow, len(s.cfg.Pipelines))
	var wg sync.WaitGroup
	for i, p := range s.cfg.Pipelines {
		rows[i] = overviewRow{P: p, Report: s.snapshotOf(p.Name).report, HotVisible: "-", HotInFlight: "-", DLQVisible: "-", DLQInFlight: "-", Local: s.onThisMachine()}
		wg.Add(2)
		go func(row *overviewRow) {
			defer wg.Done()
			row.Breakers = s.breakers(r.Context(), row.P)
		}(&rows[i])
		go func(row *overviewRow) {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
			defer cancel()
			q, err := s.cfg.Resolve(ctx, row.P)
			if err != nil {
				row.queueErr(err)
				return
			}
			if row.HotVisible, row.HotInFlight, err = s.depth(ctx, q.HotURL); err != nil {
				row.queueErr(err)
			}
			if row.DLQVisible, row.DLQInFlight, err = s.depth(ctx, q.DLQURL); err != nil {
				row.queueErr(err)
			}
			if row.NotCreated {
				row.HotVisible, row.HotInFlight, row.DLQVisible, row.DLQInFlight = "-", "-", "-", "-"
			}
		}(&rows[i])
	}
	wg.Wait()
	s.render(w, r, http.StatusOK, "overview", page{Title: "Overview", Nav: "overview", Data: rows})
}

// queueErr records what went wrong reading the row's queues: queues that
// do not exist are NotCreated, anything else an error to show.
func (row *overviewRow) queueErr(err error) {
	var nf *sqstypes.QueueDoesNotExist
	var api smithy.APIError
	if errors.Is(err, ErrQueuesNotFound) || errors.As(err, &nf) ||
		(errors.As(err, &api) && (api.ErrorCode() == "AWS.SimpleQueueService.NonExistentQueue" || api.ErrorCode() == "QueueDoesNotExist")) {
		row.NotCreated = true
		return
	}
	row.QueueErr = err.Error()
}

func (s *Server) depth(ctx context.Context, url string) (visible, inFlight string, err error) {
	out, err := s.cfg.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		return "?", "?", err
	}
	return out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)], out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)], nil
}

// ---- pipeline ----

type pipelineData struct {
	View    render.HTMLView
	Key     string // the latest report's key
	LoadErr string // why kept reports could not be read
	Letters bool   // the letters are in memory
	// Filter is the page's filter (the URL's); FilterErr why the report
	// could not be filtered.
	Filter    pageFilter
	FilterErr string
	// Live is the DLQ's depth now beside the report's count and age.
	Live *liveState
	// Breakers are the pipeline's circuit breakers, read now.
	Breakers *breakerView
}

// consoleGroupLimit caps the groups a reason lists on the pipeline page.
const consoleGroupLimit = 50

func (s *Server) pipelinePage(w http.ResponseWriter, r *http.Request) {
	p, sn, ok := s.pipeline(r)
	if !ok {
		s.notFound(w, r, "No such pipeline.")
		return
	}
	d := pipelineData{Key: sn.key, LoadErr: sn.loadErr, Letters: sn.letters != nil, Filter: s.filterOf(r), Breakers: s.breakers(r.Context(), p)}
	pg := page{Title: p.Name, Nav: "pipeline", P: p, Data: &d, CSRF: s.csrf}
	code := http.StatusOK
	if sn.report != nil {
		rep, why := s.narrowed(p, sn, d.Filter)
		if d.FilterErr = why; d.Filter.Err != "" {
			d.FilterErr, code = d.Filter.Err, http.StatusBadRequest
		}
		if rep == nil || d.Filter.Err != "" {
			rep, d.Filter.Query = sn.report, "" // the whole report, and the notice says why
		}
		d.Live = s.live(r.Context(), p, sn)
		pl, _ := s.plan(r.Context(), p, rep, planGroups(rep))
		d.View = render.HTMLView{Report: rep, History: sn.history, Now: s.cfg.Now(), Console: true, GroupLimit: consoleGroupLimit,
			Extra: map[string]any{"Page": &pg, "Data": &d}, Query: d.Filter.Query, Notes: groupNotes(pl)}
	}
	s.render(w, r, code, "pipeline-page", pg)
}

// reportHTML serves the kept report.html of the latest report.
func (s *Server) reportHTML(w http.ResponseWriter, r *http.Request) {
	p, sn, ok := s.pipeline(r)
	if !ok || sn == nil || sn.key == "" {
		s.notFound(w, r, "No kept report for this pipeline yet.")
		return
	}
	data, err := s.cfg.Reports.Get(r.Context(), strings.TrimSuffix(sn.key, ".json")+".html")
	if err != nil {
		s.notFound(w, r, "The report of "+p.Name+" has no HTML file: "+err.Error())
		return
	}
	// The kept page carries its own inline <style>: allow exactly that.
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(data)
}

// ---- group ----

type groupData struct {
	G        *report.Group
	Letters  []letterRow
	More     int
	InMemory bool
	Verdict  redrivetype.Verdict
	Expiring int
	Warning  int
	// Decision is the group's line of the plan, marked with the owner's
	// past decisions (a rejection; for effect_unknown, the keys reconciled)
	// and the command to run next; DecisionsUnread says why the decisions
	// could not be read.
	Decision        redrivetype.PlanGroup
	DecisionsUnread string
	// Keys are the effect_unknown group's idempotency keys from KeysFrom
	// (at most groupKeyLimit), with their ledger state; KeysTotal counts the
	// keys the report lists, KeysOmitted those it left out.
	Keys                []keyRow
	KeysFrom, KeysTotal int
	KeysOmitted         int
	KeysPrev, KeysNext  int // offsets of the previous and next pages; -1: none
	// ScanPartial: the report's scan did not see every letter (keys may be missing).
	ScanPartial bool
	// Filter is the page's filter: the group's letters it chose; its links keep it.
	Filter pageFilter
	// Verify is the "Verify with the tools" form of an effect_unknown group.
	Verify *verifyForm
	// Live is the DLQ's depth now beside the report's count and age.
	Live *liveState
}

type letterRow struct {
	ID          string
	At          time.Time
	Tenant      string
	Tool        string
	Attempts    int
	Error       string
	DeletesAt   time.Time
	ExpiresSoon bool
}

// groupLetterLimit caps the letters a group page lists.
const groupLetterLimit = 200

// groupKeyLimit caps the keys a group page lists (one ledger read each);
// ?ko= pages through the rest.
const groupKeyLimit = 100

func (s *Server) groupPage(w http.ResponseWriter, r *http.Request) {
	p, sn, ok := s.pipeline(r)
	if !ok {
		s.notFound(w, r, "No such pipeline.")
		return
	}
	rep, pf, ok := s.filteredReport(w, r, p, sn)
	if !ok {
		return
	}
	g := (&snapshot{report: rep}).group(r.FormValue("r"), r.FormValue("fp"))
	if g == nil {
		msg := "No such group in the latest report of " + p.Name + ". Refresh the pipeline: the DLQ may have changed."
		if pf.On() {
			msg = "No dead letter of this group matches the filter (" + pf.F.String() + ")."
		}
		s.notFound(w, r, msg)
		return
	}
	now := s.cfg.Now()
	d := groupData{G: g, InMemory: sn.letters != nil, Verdict: redrive.Decide(g.Reason, redrive.Ack{}), Warning: p.Triage.WarningHours, KeysPrev: -1, KeysNext: -1,
		ScanPartial: !rep.Complete, Filter: pf}
	pl, dec := s.plan(r.Context(), p, rep, []redrive.Group{{Reason: g.Reason, Fingerprint: g.Fingerprint, Count: g.Count}})
	if g.Reason == deadletter.ReasonEffectUnknown {
		d.Verify = &verifyForm{CSRF: s.csrf, Pipeline: p.Name, Owner: p.Owner, Reason: string(g.Reason), Fingerprint: g.Fingerprint}
	}
	if len(pl.Groups) > 0 {
		d.Decision = pl.Groups[0]
	}
	d.DecisionsUnread = pl.DecisionsUnread
	d.Live = s.live(r.Context(), p, sn)
	if ks := g.IdempotencyKeys; len(ks) > 0 {
		from, _ := strconv.Atoi(r.FormValue("ko"))
		from = max(0, min(from, len(ks)-1))
		to := min(from+groupKeyLimit, len(ks))
		d.Keys = s.keyRows(r.Context(), p, sn, ks[from:to], dec)
		d.KeysFrom, d.KeysTotal, d.KeysOmitted = from, len(ks), g.IdempotencyKeysOmitted
		if from > 0 {
			d.KeysPrev = max(0, from-groupKeyLimit)
		}
		if to < len(ks) {
			d.KeysNext = to
		}
	}
	if d.InMemory {
		ls := g.Letters
		window := time.Duration(p.Triage.WarningHours) * time.Hour
		retention := time.Duration(rep.Expiry.DLQRetentionSeconds) * time.Second
		for _, t := range ls {
			if len(d.Letters) == groupLetterLimit {
				d.More = len(ls) - groupLetterLimit
				break
			}
			e := triage.ExpiryOf(t, rep.FIFO, retention, now)
			row := letterRow{ID: t.MessageID, At: t.DeadLetteredAt, Tenant: s.tenant(p, t.Hints.Tenant), Tool: t.Hints.Tool, DeletesAt: e.DeletesAt, ExpiresSoon: e.DeletesAt.Sub(now) <= window}
			if t.Meta != nil {
				row.Attempts, row.Error = t.Meta.Attempts, t.Meta.Error
			} else if t.MetaErr != nil {
				row.Error = t.MetaErr.Error()
			}
			d.Letters = append(d.Letters, row)
		}
	}
	s.render(w, r, http.StatusOK, "group", page{Title: string(g.Reason) + " " + short(g.Fingerprint), Nav: "pipeline", P: p, Data: d})
}

// tenant shows a tenant as the report does: hashed when the pipeline's
// eval.hash_fields names it.
func (s *Server) tenant(p *pipeline.Pipeline, tn string) string {
	if tn != "" && triage.HashesTenants(p) {
		return triage.HashValue(tn)
	}
	return tn
}

// ---- letter ----

type letterData struct {
	ID        string
	T         *dlq.Tagged
	Group     *report.Group
	Expiry    triage.Expiry
	Countdown string
	Soon      bool
	Ledger    *ledger.Entry
	LedgerMsg string
	Body      string
	Revealed  bool
	Attrs     []attrRow
	Error     string // a refused reveal
	Actor     string
	Why       string
	// Tenant is the letter's tenant as the report shows tenants (hashed
	// when the pipeline's eval.hash_fields names it).
	Tenant string
	// KeyState is the ledger state of the letter's key (keyState), KeyClass
	// its badge class; Reconcile is the reconcile form, while the key's
	// effect is unknown.
	KeyState, KeyClass string
	Reconcile          *reconcileForm
	// IDs are the task's tool, versions and ids as its group shows them.
	IDs taskIDs
	// Decision is the plan's line for the letter's group (nil when the
	// plan could not be read): a rejected group offers no redrive.
	Decision *redrivetype.PlanGroup
}

// taskIDs are a letter's task fields: dlq_meta's and, where the metadata
// lacks one, the body's (triage groups by the same fallback, so that the
// letter page shows the tool, versions and ids its group page shows).
type taskIDs struct {
	Tool, ToolVersion         string
	Schema                    int
	TaskID, RunID, Key, Trace string
	// FromBody names the fields read from the body, not the metadata.
	FromBody []string
}

// idsOf reads a letter's task fields from its metadata, then its body.
func idsOf(t *dlq.Tagged) taskIDs {
	var ids taskIDs
	if m := t.Meta; m != nil {
		ids = taskIDs{Tool: m.Tool, ToolVersion: m.ToolVersion, Schema: m.SchemaVersion, TaskID: m.TaskID, RunID: m.RunID, Key: m.IdempotencyKey, Trace: m.TraceID}
	}
	var b struct {
		Tool          string `json:"tool"`
		ToolVersion   string `json:"tool_version"`
		SchemaVersion int    `json:"schema_version"`
		TaskID        string `json:"task_id"`
		RunID         string `json:"run_id"`
		Key           string `json:"idempotency_key"`
		Trace         string `json:"trace_id"`
	}
	if t.BodyErr != nil || json.Unmarshal([]byte(t.Body), &b) != nil {
		// Not a JSON object: the hints triage read, if any.
		b.Tool, b.ToolVersion, b.SchemaVersion, b.TaskID, b.Key = t.Hints.Tool, t.Hints.ToolVersion, t.Hints.SchemaVersion, t.Hints.TaskID, t.Hints.IdempotencyKey
	}
	fill := func(name string, dst *string, v string) {
		if *dst == "" && v != "" {
			*dst = v
			ids.FromBody = append(ids.FromBody, name)
		}
	}
	fill("tool", &ids.Tool, b.Tool)
	fill("tool version", &ids.ToolVersion, b.ToolVersion)
	if ids.Schema == 0 && b.SchemaVersion != 0 {
		ids.Schema = b.SchemaVersion
		ids.FromBody = append(ids.FromBody, "schema version")
	}
	fill("task id", &ids.TaskID, b.TaskID)
	fill("run id", &ids.RunID, b.RunID)
	fill("idempotency key", &ids.Key, b.Key)
	fill("trace id", &ids.Trace, b.Trace)
	return ids
}

type attrRow struct{ Name, Type, Value string }

func (s *Server) letterPage(w http.ResponseWriter, r *http.Request) {
	s.renderLetter(w, r, false, "")
}

func (s *Server) renderLetter(w http.ResponseWriter, r *http.Request, revealed bool, refusal string) {
	p, sn, ok := s.pipeline(r)
	if !ok {
		s.notFound(w, r, "No such pipeline.")
		return
	}
	id := r.FormValue("id")
	d := letterData{ID: id, Error: refusal, Actor: r.PostFormValue("actor"), Why: r.PostFormValue("why")}
	if sn.letters != nil {
		d.T = sn.letters[id]
	}
	if d.T == nil {
		code := http.StatusOK
		if sn.letters != nil {
			code = http.StatusNotFound
		}
		s.render(w, r, code, "letter", page{Title: "Letter " + id, Nav: "pipeline", P: p, Data: d})
		return
	}
	t := d.T
	now := s.cfg.Now()
	d.Group = sn.group(string(t.Reason), t.Fingerprint)
	d.Expiry = triage.ExpiryOf(t, sn.report.FIFO, time.Duration(sn.report.Expiry.DLQRetentionSeconds)*time.Second, now)
	d.Countdown = countdown(d.Expiry.DeletesAt, now)
	d.Soon = d.Expiry.DeletesAt.Sub(now) <= time.Duration(p.Triage.WarningHours)*time.Hour
	switch key := t.Hints.IdempotencyKey; {
	case key == "":
		d.LedgerMsg = "no idempotency key: the body is not an agent task"
	case s.cfg.Ledger == nil:
		d.LedgerMsg = "no ledger configured"
	default:
		e, found, err := s.cfg.Ledger.Get(r.Context(), ledger.Key(p.Name, t.Hints.Tenant, key))
		switch {
		case err != nil:
			d.LedgerMsg = "ledger read failed: " + err.Error()
		case !found:
			d.LedgerMsg = "no ledger entry for key " + key
		default:
			d.Ledger = &e
			d.KeyState, d.KeyClass = keyState(&e, now)
			if e.EffectUnknown(now) {
				d.Reconcile = &reconcileForm{CSRF: s.csrf, Pipeline: p.Name, Owner: p.Owner, Key: key, Tenant: t.Hints.Tenant,
					Reason: string(t.Reason), Fingerprint: t.Fingerprint, LetterID: t.MessageID}
			}
		}
	}
	d.IDs = idsOf(t)
	n := 1
	if d.Group != nil {
		n = d.Group.Count
	}
	if pl, _ := s.plan(r.Context(), p, sn.report, []redrive.Group{{Reason: t.Reason, Fingerprint: t.Fingerprint, Count: n}}); len(pl.Groups) > 0 {
		d.Decision = &pl.Groups[0]
	}
	d.Revealed = revealed
	d.Tenant = s.tenant(p, t.Hints.Tenant)
	if revealed {
		d.Tenant = t.Hints.Tenant
	}
	d.Body = prettyBody(t.Body, p, revealed)
	names := make([]string, 0, len(t.Attributes))
	for n := range t.Attributes {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		a := t.Attributes[n]
		v := "(binary, " + strconv.Itoa(len(a.BinaryValue)) + " bytes)"
		if a.BinaryValue == nil {
			v = a.StringValue
			if n == deadletter.AttrMeta {
				v = "(decoded above)"
			} else if !revealed {
				v = deadletter.RedactAttribute(n, v, 120) // dlq_reason too: a producer may have set it
			}
		}
		d.Attrs = append(d.Attrs, attrRow{Name: n, Type: a.DataType, Value: v})
	}
	// The attributes folded into dlq_meta (redrive restores them) are shown
	// under the same rule as the others.
	if t.Meta != nil {
		folded := slices.Sorted(maps.Keys(t.Meta.Folded))
		for _, n := range folded {
			a := t.Meta.Folded[n]
			v := "(binary, " + strconv.Itoa(len(a.BinaryValue)) + " bytes)"
			if a.BinaryValue == nil {
				v = a.StringValue
				if !revealed {
					v = deadletter.RedactAttribute(n, v, 120)
				}
			}
			d.Attrs = append(d.Attrs, attrRow{Name: n, Type: a.DataType + " (folded in dlq_meta)", Value: v})
		}
	}
	s.render(w, r, http.StatusOK, "letter", page{Title: "Letter " + short(id), Nav: "pipeline", P: p, Data: d})
}

// prettyBody is the body indented when it is JSON: redacted as an eval
// input is, unless revealed.
func prettyBody(body string, p *pipeline.Pipeline, revealed bool) string {
	if !revealed {
		v := eval.RedactInput(body, p.Eval)
		if s, ok := v.(string); ok {
			return s
		}
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return deadletter.Redact(body, 0)
		}
		return string(b)
	}
	var out bytes.Buffer
	if json.Indent(&out, []byte(body), "", "  ") == nil {
		return out.String()
	}
	return body
}

// ActionReveal is the audit action of revealing a letter's body
// (audit.ActionReveal).
const ActionReveal = audit.ActionReveal

// reveal shows one letter's body unredacted, after recording who and why.
func (s *Server) reveal(w http.ResponseWriter, r *http.Request) {
	p, sn, ok := s.pipeline(r)
	if !ok {
		s.notFound(w, r, "No such pipeline.")
		return
	}
	id := r.PostFormValue("id")
	actor, why := strings.TrimSpace(r.PostFormValue("actor")), strings.TrimSpace(r.PostFormValue("why"))
	if sn.letters == nil || sn.letters[id] == nil {
		s.renderLetter(w, r, false, "")
		return
	}
	rec := audit.Entry{Actor: actor, Pipeline: p.Name, Action: ActionReveal, Why: why, Outcome: audit.OutcomeOK,
		Reasons: []string{string(sn.letters[id].Reason)}, Fingerprints: []string{sn.letters[id].Fingerprint}, Detail: map[string]string{"message_id": id}}
	refusal := ""
	if actor == "" || why == "" {
		rec.Outcome, rec.Error = audit.OutcomeRefused, "who and why are required to reveal a body"
		refusal = rec.Error
	}
	if rec.Actor == "" {
		rec.Actor = "(unnamed)"
	}
	// Who runs the console, as the machine knows it: in AWS the STS caller
	// (one call per reveal), locally the OS user; as the pipeline's
	// Redriver decides, else not checked.
	caller := audit.UncheckedCaller()
	if rd, err := s.redriver(r.Context(), p, nil); err == nil {
		caller, _ = rd.Identify(r.Context())
	}
	rec.Caller = &caller
	a := &audit.Auditor{Store: s.cfg.Audit(p.Name), Logger: s.log, Now: s.cfg.Now}
	if err := a.Record(r.Context(), rec); err != nil && refusal == "" {
		refusal = "the audit could not record the reveal, so the body stays redacted: " + err.Error()
	}
	s.renderLetter(w, r, refusal == "", refusal)
}

// ---- audit ----

type auditData struct {
	Records           []audit.Entry
	Total, Shown      int
	Action, Outcome   string
	Actions, Outcomes []string
	Err               string
}

// auditLimit caps the records an audit page lists.
const auditLimit = 500

func (s *Server) auditPage(w http.ResponseWriter, r *http.Request) {
	p, _, ok := s.pipeline(r)
	if !ok {
		if len(s.cfg.Pipelines) == 0 {
			s.notFound(w, r, "No pipeline.")
			return
		}
		p = s.cfg.Pipelines[0]
	}
	d := auditData{Action: r.FormValue("action"), Outcome: r.FormValue("outcome")}
	recs, err := s.cfg.Audit(p.Name).Records(r.Context())
	if err != nil {
		d.Err = err.Error()
	}
	actions, outcomes := map[string]bool{}, map[string]bool{}
	for _, rec := range recs {
		actions[string(rec.Action)], outcomes[string(rec.Outcome)] = true, true
	}
	for a := range actions {
		d.Actions = append(d.Actions, a)
	}
	for o := range outcomes {
		d.Outcomes = append(d.Outcomes, o)
	}
	slices.Sort(d.Actions)
	slices.Sort(d.Outcomes)
	d.Total = len(recs)
	newestFirst(recs)
	for _, rec := range recs {
		if (d.Action != "" && string(rec.Action) != d.Action) || (d.Outcome != "" && string(rec.Outcome) != d.Outcome) {
			continue
		}
		d.Shown++
		if len(d.Records) < auditLimit {
			d.Records = append(d.Records, rec)
		}
	}
	s.render(w, r, http.StatusOK, "audit", page{Title: "Audit of " + p.Name, Nav: "audit", P: p, Data: d})
}

// ---- helpers for the templates ----

func short(fp string) string {
	if len(fp) > 12 {
		return fp[:12]
	}
	return fp
}

func consoleFuncs() template.FuncMap {
	return template.FuncMap{
		"short": short,
		"tsec": func(t time.Time) string {
			if t.IsZero() {
				return "-"
			}
			return t.UTC().Format("2006-01-02 15:04:05Z")
		},
		"countdown": countdown,
		"pct": func(n, total int) int {
			if total <= 0 {
				return 0
			}
			return min(100, n*100/total)
		},
		"join":        strings.Join,
		"detail":      detailLine,
		"counts":      countsLine,
		"reconciled":  reconciledLine,
		"plus":        func(a, b int) int { return a + b },
		"steps":       stepLinks,
		"fsteps":      filteredStepLinks,
		"repairForm":  newRepairFormView,
		"repairCard":  newRepairCardView,
		"need":        func(field string) string { return needLabel[field] },
		"policyWhy":   policyWhy,
		"decisionWhy": decisionWhy,
		"closed":      closed,
		"letters":     lettersWord,
		"words":       wordBreaks,
		"clock":       clockWords,
	}
}

// reconciledLine is a plan group's reconciled keys in a line: "2/3 keys
// reconciled (1 effect_confirmed, 1 no_effect)".
func reconciledLine(g redrivetype.PlanGroup) string {
	n := 0
	var parts []string
	for _, o := range ledger.AllOutcomes() {
		if c := g.Reconciled[o]; c > 0 {
			n += c
			parts = append(parts, strconv.Itoa(c)+" "+string(o))
		}
	}
	line := strconv.Itoa(n) + "/" + strconv.Itoa(g.Keys) + " keys reconciled"
	if len(parts) > 0 {
		line += " (" + strings.Join(parts, ", ") + ")"
	}
	return line
}

func detailLine(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, " ")
}

// countWords are the audit's count names an operator would not read as
// meant: a select's "matched" are the letters it chose, its "released" the
// ones it made visible again at once, which stay in the DLQ (not chosen,
// or all of a dry run's): as the CLI and the job page say them
// (redrive.SelectResult.Summary).
var countWords = map[string]string{"matched": "chosen", "released": "left in the DLQ"}

func countsLine(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		name := k
		if w, ok := countWords[k]; ok {
			name = w
		}
		parts[i] = name + " " + strconv.Itoa(m[k])
	}
	return strings.Join(parts, ", ")
}
