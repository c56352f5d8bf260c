package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/agentdlq/agentdlq/internal/textutil"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/eval"
	"github.com/agentdlq/agentdlq/triage/render"
	"github.com/agentdlq/agentdlq/triage/report"
	"github.com/agentdlq/agentdlq/triage/store"
)

// Target is one pipeline the triage Lambda watches: one entry of
// AGENTDLQ_TRIAGE_TARGETS (docs/wiring.md).
type Target struct {
	Pipeline      pipeline.Pipeline `json:"pipeline"`
	HotQueueURL   string            `json:"hot_queue_url"`
	HotQueueARN   string            `json:"hot_queue_arn"`
	DLQURL        string            `json:"dlq_url"`
	DLQARN        string            `json:"dlq_arn"`
	AlarmTopicARN string            `json:"alarm_topic_arn"`
	// Senders are the principals whose dead letters carry evidence
	// (triage.Senders: the worker's and the redrive role's unique ids).
	Senders []string `json:"senders,omitempty"`
}

// ParseTargets reads AGENTDLQ_TRIAGE_TARGETS: a JSON list of targets. Each
// pipeline gets its defaults and is validated; dlq_url is required. Unknown
// fields are ignored, so that a newer CDK app does not stop an older triage.
func ParseTargets(data []byte) ([]Target, error) {
	var ts []Target
	if err := json.Unmarshal(data, &ts); err != nil {
		return nil, fmt.Errorf("triage targets: %w", err)
	}
	if len(ts) == 0 {
		return nil, errors.New("triage targets: the list is empty")
	}
	var errs []error
	for i := range ts {
		ts[i].Pipeline.ApplyDefaults()
		if err := ts[i].Pipeline.Validate(); err != nil {
			errs = append(errs, err)
		}
		if ts[i].DLQURL == "" {
			errs = append(errs, fmt.Errorf("triage target %q: dlq_url is required", ts[i].Pipeline.Name))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("triage targets: %w", err)
	}
	return ts, nil
}

// PublishAPI is what the handler needs of SNS.
type PublishAPI interface {
	Publish(ctx context.Context, params *sns.PublishInput, optFns ...func(*sns.Options)) (*sns.PublishOutput, error)
}

// Handler is the triage Lambda's logic. main.go builds it from the
// environment and hands Handle to lambda.Start.
type Handler struct {
	// Targets is required.
	Targets []Target
	// SQS is required.
	SQS triage.ScanAPI
	// Dest is optional: where reports and eval exports go (the eval bucket).
	Dest store.Destination
	// SNS is optional: without it no alarm summary is published.
	SNS PublishAPI
	// Ledger is optional.
	Ledger triage.KeyReader
	// Processed is optional: where each report reads the worker's processed
	// count of the SLO period, to state the error budget spent
	// (triage.Config.ProcessedFrom; main.go's is CloudWatch). A failed
	// read fails no triage: the report says the budget is not known, and why.
	Processed triage.ProcessedSource
	// Scan is optional (see triage.Config.Scan).
	Scan triage.ScanOptions
	// Metrics receives the EMF documents (default os.Stdout).
	Metrics io.Writer
	// Region is optional: the AWS region of the eval bucket, for the S3
	// console link of the report in the alarm summary (AWS_REGION).
	Region string
	// Next is optional: the lines the alarm summary ends with, under
	// "Next:", for a pipeline (the Lambda's: the commands an owner runs).
	// A library does not spell command lines; without Next there are none.
	Next func(pipelineName string) []string
	// Now is the clock (default time.Now); Logger defaults to slog.Default().
	Now    func() time.Time
	Logger *slog.Logger
}

// event is what the handler is invoked with: either an EventBridge event as
// it stands (DetailType and Detail set), or the compact event the CDK app's
// rules build with an input transformer (Trigger and Pipeline set):
//
//	{"trigger":"schedule","pipeline":"agent-tasks"}
//	{"trigger":"alarm","pipeline":"agent-tasks","alarm_name":"…","alarm_arn":"…","state":"ALARM","time":"…"}
type event struct {
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Resources  []string        `json:"resources"`
	Detail     json.RawMessage `json:"detail"`

	Trigger   string `json:"trigger"`
	Pipeline  string `json:"pipeline"`
	AlarmName string `json:"alarm_name"`
	State     string `json:"state"`
}

// Trigger values of the compact event.
const (
	triggerSchedule = "schedule"
	triggerAlarm    = "alarm"
)

// The EventBridge detail types the handler accepts.
const (
	detailScheduled  = "Scheduled Event"
	detailAlarmState = "CloudWatch Alarm State Change"
)

// errUnknownEvent: the handler was invoked with something it does not read.
var errUnknownEvent = errors.New("triage: unknown event")

// alarmDetail is the part of a "CloudWatch Alarm State Change" detail the handler reads.
type alarmDetail struct {
	AlarmName string `json:"alarmName"`
	State     struct {
		Value string `json:"value"`
	} `json:"state"`
	Configuration struct {
		Metrics []struct {
			MetricStat struct {
				Metric struct {
					Namespace  string            `json:"namespace"`
					Name       string            `json:"name"`
					Dimensions map[string]string `json:"dimensions"`
				} `json:"metric"`
			} `json:"metricStat"`
		} `json:"metrics"`
	} `json:"configuration"`
}

// Result says what one invocation did.
type Result struct {
	Trigger   string           `json:"trigger"` // "schedule" or "alarm:<name>"
	Pipelines []PipelineResult `json:"pipelines"`
}

// PipelineResult is one pipeline's triage in an invocation.
type PipelineResult struct {
	Pipeline string `json:"pipeline"`
	Messages int    `json:"messages"`
	// Complete is the report's: the scan saw every dead letter. Partial is
	// the report's too: not Complete, or an export or the ledger fell short.
	Complete  bool   `json:"complete"`
	Partial   bool   `json:"partial"`
	Exported  int    `json:"exported"`
	ReportKey string `json:"report_key,omitempty"`
	// BudgetSpentPercent is the report's: the share of the SLO period's
	// error budget its dead letters spent, when the processed count was read.
	BudgetSpentPercent *float64 `json:"budget_spent_percent,omitempty"`
	Published          bool     `json:"published"`
	Error              string   `json:"error,omitempty"`
}

// Handle triages on a schedule (every target) or on a DLQ alarm (the
// pipeline whose alarm fired; see matchAlarm), writes each report's JSON
// and Markdown next to the eval exports, emits the EMF metrics, and on an
// alarm in state ALARM publishes summary to the pipeline's alarm topic. It
// returns an error when any pipeline could not be triaged, after doing the others.
func (h *Handler) Handle(ctx context.Context, raw json.RawMessage) (Result, error) {
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	log := h.Logger
	if log == nil {
		log = slog.Default()
	}
	var ev event
	if err := json.Unmarshal(raw, &ev); err != nil {
		return Result{}, fmt.Errorf("%w: %v", errUnknownEvent, err)
	}
	var targets []Target
	var alarm *alarmDetail
	res := Result{}
	switch {
	case ev.Trigger == triggerSchedule || ev.Trigger == triggerAlarm:
		t, ok := h.target(ev.Pipeline)
		if !ok {
			return Result{}, fmt.Errorf("%w: pipeline %q is not among the targets", errUnknownEvent, ev.Pipeline)
		}
		targets, res.Trigger = []Target{t}, triggerSchedule
		if ev.Trigger == triggerAlarm {
			res.Trigger = "alarm:" + ev.AlarmName
			alarm = &alarmDetail{AlarmName: ev.AlarmName}
			alarm.State.Value = ev.State
		}
	case ev.DetailType == detailScheduled:
		res.Trigger, targets = "schedule", h.Targets
	case ev.DetailType == detailAlarmState:
		alarm = &alarmDetail{}
		if err := json.Unmarshal(ev.Detail, alarm); err != nil {
			return Result{}, fmt.Errorf("%w: alarm detail: %v", errUnknownEvent, err)
		}
		res.Trigger = "alarm:" + alarm.AlarmName
		if t, ok := matchAlarm(h.Targets, alarm); ok {
			targets = []Target{t}
		} else {
			log.WarnContext(ctx, "alarm matches no pipeline: triaging every pipeline, publishing nothing", "alarm", alarm.AlarmName)
			targets, alarm = h.Targets, nil
		}
	default:
		return Result{}, fmt.Errorf("%w: detail-type %q, trigger %q (want %q or %q, or trigger %q or %q)",
			errUnknownEvent, ev.DetailType, ev.Trigger, detailScheduled, detailAlarmState, triggerSchedule, triggerAlarm)
	}

	metrics := h.Metrics
	if metrics == nil {
		metrics = os.Stdout
	}
	var errs []error
	for i := range targets {
		t := &targets[i]
		pr := PipelineResult{Pipeline: t.Pipeline.Name}
		cfg := triage.Config{Pipeline: &t.Pipeline, DLQURL: t.DLQURL, SQS: h.SQS, Senders: t.Senders, Ledger: h.Ledger, Scan: h.Scan, Now: now, Logger: log,
			ProcessedFrom: h.Processed}
		if h.Dest != nil {
			cfg.Export, cfg.Keep = eval.To(h.Dest), render.KeepIn(h.Dest)
		}
		cfg.Scan.MaxDuration = scanBudget(ctx, &t.Pipeline, cfg.Scan.MaxDuration, len(targets)-i, time.Now())
		r, err := triage.Run(ctx, cfg)
		if err != nil {
			pr.Error = err.Error()
			errs = append(errs, err)
		}
		if r != nil {
			pr.Messages, pr.Complete, pr.Partial = r.Totals.Messages, r.Complete, r.Partial
			if r.Export != nil {
				pr.Exported = r.Export.Exported
			}
			if len(r.Written) > 0 {
				pr.ReportKey = r.Written[0]
			}
			if r.SLO != nil {
				pr.BudgetSpentPercent = r.SLO.BudgetSpentPercent
			}
			if err := writeEMF(metrics, r, now()); err != nil {
				errs = append(errs, err)
			}
			if alarm != nil && alarm.State.Value == "ALARM" && h.SNS != nil && t.AlarmTopicARN != "" {
				var next []string
				if h.Next != nil {
					next = h.Next(r.Pipeline)
				}
				subject, body := summary(r, alarm.AlarmName, h.reportLinks(r.Written), next)
				if _, err := h.SNS.Publish(ctx, &sns.PublishInput{TopicArn: aws.String(t.AlarmTopicARN), Subject: aws.String(subject), Message: aws.String(body)}); err != nil {
					log.ErrorContext(ctx, "triage summary publish failed", "pipeline", t.Pipeline.Name, "error", err.Error())
					errs = append(errs, fmt.Errorf("publish summary of %s: %w", t.Pipeline.Name, err))
				} else {
					pr.Published = true
				}
			}
		}
		res.Pipelines = append(res.Pipelines, pr)
	}
	return res, errors.Join(errs...)
}

// target finds a target by pipeline name.
func (h *Handler) target(name string) (Target, bool) {
	for _, t := range h.Targets {
		if t.Pipeline.Name == name {
			return t, true
		}
	}
	return Target{}, false
}

// scanBudget bounds a scan so that every remaining pipeline still gets its
// share of the invocation's time (its deadline less 20 s for the report,
// export and metrics); a partial scan says so in its report, a timed-out
// Lambda says nothing.
func scanBudget(ctx context.Context, p *pipeline.Pipeline, configured time.Duration, remaining int, wall time.Time) time.Duration {
	d := configured
	if d == 0 {
		d = time.Duration(p.Triage.MaxSeconds) * time.Second
	}
	if deadline, ok := ctx.Deadline(); ok && remaining > 0 {
		share := (deadline.Sub(wall) - 20*time.Second) / time.Duration(remaining)
		if share < time.Second {
			share = time.Second
		}
		d = min(d, share)
	}
	return d
}

// alarmLinks say where the reader of an alarm summary finds the report.
type alarmLinks struct {
	// HTML is the self-contained report: its S3 URI, or its path in a folder.
	HTML string
	// JSON is the full report beside it.
	JSON string
	// Console is the AWS console's page of the HTML object (S3 only).
	Console string
}

// reportLinks names the report files Run wrote (JSON, Markdown, HTML).
func (h *Handler) reportLinks(written []string) alarmLinks {
	if h.Dest == nil || len(written) < 3 {
		return alarmLinks{}
	}
	jsonKey, htmlKey := written[0], written[2]
	s3d, ok := h.Dest.(*store.S3)
	if !ok {
		root := strings.TrimSuffix(h.Dest.String(), "/") + "/"
		return alarmLinks{HTML: root + htmlKey, JSON: root + jsonKey}
	}
	return alarmLinks{
		HTML: "s3://" + s3d.Bucket + "/" + s3d.Prefix + htmlKey, JSON: "s3://" + s3d.Bucket + "/" + s3d.Prefix + jsonKey,
		Console: s3ConsoleURL(h.Region, s3d.Bucket, s3d.Prefix+htmlKey),
	}
}

// s3ConsoleURL is the AWS console's page of one S3 object (where a
// responder opens or downloads it with their own console session).
func s3ConsoleURL(region, bucket, key string) string {
	host, q := "console.aws.amazon.com", url.Values{}
	if region != "" {
		host = region + ".console.aws.amazon.com"
		q.Set("region", region)
	}
	q.Set("bucketType", "general")
	q.Set("prefix", key)
	return "https://" + host + "/s3/object/" + url.PathEscape(bucket) + "?" + q.Encode()
}

// matchAlarm finds the pipeline an alarm is about, in this order:
//  1. a metric dimension Pipeline equal to a pipeline's name (agentdlq's own
//     metrics, namespace AgentDLQ);
//  2. a metric dimension QueueName equal to a target's DLQ name (the last
//     segment of dlq_url, or of dlq_arn) — the AWS/SQS depth alarms;
//  3. the alarm name containing a pipeline's name (the longest wins), for
//     composite alarms and math expressions without dimensions.
func matchAlarm(targets []Target, a *alarmDetail) (Target, bool) {
	for _, m := range a.Configuration.Metrics {
		dims := m.MetricStat.Metric.Dimensions
		for _, t := range targets {
			if p := dims["Pipeline"]; p != "" && p == t.Pipeline.Name {
				return t, true
			}
			if q := dims["QueueName"]; q != "" && (q == lastSegment(t.DLQURL, "/") || q == lastSegment(t.DLQARN, ":")) {
				return t, true
			}
		}
	}
	best, found := Target{}, false
	for _, t := range targets {
		if strings.Contains(a.AlarmName, t.Pipeline.Name) && len(t.Pipeline.Name) > len(best.Pipeline.Name) {
			best, found = t, true
		}
	}
	return best, found
}

func lastSegment(s, sep string) string {
	if s == "" {
		return ""
	}
	return s[strings.LastIndex(s, sep)+1:]
}

// summary is the short text published to a pipeline's alarm topic: the top
// reasons, the soonest expiry, and next, the lines Handler.Next gives (the
// Lambda's: what to run). SNS subjects are at most 100 characters; the
// subject names the product, as a sender does, never a command.
func summary(r *report.Report, alarmName string, links alarmLinks, next []string) (subject, body string) {
	subject = fmt.Sprintf("agentdlq %s: %d dead letters", r.Pipeline, r.Totals.Messages)
	if !r.Complete {
		subject = fmt.Sprintf("agentdlq %s: at least %d dead letters (partial scan)", r.Pipeline, r.Totals.Messages)
	}
	if len(r.Totals.ByReason) > 0 {
		subject += fmt.Sprintf(", top %s (%d)", r.Totals.ByReason[0].Reason, r.Totals.ByReason[0].Count)
	}
	if len(subject) > 100 {
		subject = subject[:100]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Triage of pipeline %s (owner %s) after alarm %s.\n", r.Pipeline, r.Owner, alarmName)
	fmt.Fprintf(&b, "%s in %s.", textutil.Count(r.Totals.Messages, "dead letter", "dead letters"), textutil.Count(r.Totals.Groups, "group", "groups"))
	if c := render.Coverage(r); c != "" {
		fmt.Fprintf(&b, "\n%s", textutil.Escape(c))
	}
	if r.Partial {
		fmt.Fprintf(&b, " PARTIAL: %s.", textutil.Escape(strings.Join(r.PartialReasons, "; ")))
	}
	b.WriteString("\n\nTop reasons:\n")
	for i, rt := range r.Totals.ByReason {
		if i == 5 {
			fmt.Fprintf(&b, "  … and %d more reasons\n", len(r.Totals.ByReason)-5)
			break
		}
		fmt.Fprintf(&b, "  %-26s %6d  next: %-15s redrivable: %s\n", rt.Reason, rt.Count, rt.NextAction, rt.Redrivable)
	}
	fmt.Fprintf(&b, "\n%s\n", render.ExpiryLine(r))
	if l := render.SLOLine(r); l != "" {
		fmt.Fprintf(&b, "%s\n", textutil.Escape(l))
	}
	for _, a := range r.Attention {
		fmt.Fprintf(&b, "! %s\n", textutil.Escape(a)) // may quote a message: shown, never a control
	}
	if links.HTML != "" {
		fmt.Fprintf(&b, "\nReport (HTML, open in a browser): %s\n", links.HTML)
		if links.Console != "" {
			fmt.Fprintf(&b, "In the AWS console: %s\n", links.Console)
		}
		fmt.Fprintf(&b, "Full report (JSON): %s\n", links.JSON)
	}
	if len(next) > 0 {
		b.WriteString("\nNext:\n")
		for _, n := range next {
			fmt.Fprintf(&b, "  %s\n", n)
		}
	}
	return subject, b.String()
}
