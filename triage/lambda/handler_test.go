package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/testkit/sqsfake"
	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/dlq"
	"github.com/agentdlq/agentdlq/triage/processed"
	"github.com/agentdlq/agentdlq/triage/store"
)

// fakeSNS records what is published.
type fakeSNS struct{ published []*sns.PublishInput }

var _ PublishAPI = (*fakeSNS)(nil)

func (f *fakeSNS) Publish(_ context.Context, in *sns.PublishInput, _ ...func(*sns.Options)) (*sns.PublishOutput, error) {
	f.published = append(f.published, in)
	return &sns.PublishOutput{MessageId: aws.String("sns-1")}, nil
}

func targetsJSON(t *testing.T) []byte {
	t.Helper()
	std, fifo := testPipeline(t, false), testPipeline(t, true)
	data, err := json.Marshal([]Target{
		{Pipeline: *std, DLQURL: "https://sqs.us-east-1.amazonaws.com/1/Stack-AgentTasksDlq-ABC", DLQARN: "arn:aws:sqs:us-east-1:1:Stack-AgentTasksDlq-ABC", AlarmTopicARN: "arn:aws:sns:us-east-1:1:tasks-alarms"},
		{Pipeline: *fifo, DLQURL: "https://sqs.us-east-1.amazonaws.com/1/Stack-StepsDlq-XYZ.fifo", DLQARN: "arn:aws:sqs:us-east-1:1:Stack-StepsDlq-XYZ.fifo", AlarmTopicARN: "arn:aws:sns:us-east-1:1:steps-alarms"},
	})
	require.NoError(t, err)
	return data
}

func TestParseTargets(t *testing.T) {
	t.Parallel()
	ts, err := ParseTargets(targetsJSON(t))
	require.NoError(t, err)
	require.Len(t, ts, 2)
	assert.Equal(t, 336, ts[0].Pipeline.DLQRetentionHours)
	ts, err = ParseTargets([]byte(`[{"pipeline":{"name":"abc","owner":"o","max_receive_count":3,"future":1},"dlq_url":"u","nope":1}]`))
	require.NoError(t, err, "unknown fields are ignored")
	assert.Equal(t, "abc", ts[0].Pipeline.Name)
	for name, bad := range map[string]string{
		"not JSON":        `{`,
		"empty":           `[]`,
		"invalid":         `[{"pipeline":{"name":"abc","owner":"","max_receive_count":9},"dlq_url":"u"}]`,
		"dlq_url missing": `[{"pipeline":{"name":"abc","owner":"o","max_receive_count":3}}]`,
	} {
		_, err := ParseTargets([]byte(bad))
		assert.Error(t, err, name)
	}
}

func alarmEvent(name string, state string, dims map[string]string) json.RawMessage {
	detail := map[string]any{
		"alarmName": name,
		"state":     map[string]any{"value": state, "reason": "Threshold Crossed"},
		"configuration": map[string]any{"metrics": []any{map[string]any{
			"id": "m1", "metricStat": map[string]any{"metric": map[string]any{"namespace": "AWS/SQS", "name": "ApproximateNumberOfMessagesVisible", "dimensions": dims}, "period": 60, "stat": "Maximum"},
		}}},
	}
	ev, _ := json.Marshal(map[string]any{"version": "0", "detail-type": detailAlarmState, "source": "aws.cloudwatch", "detail": detail})
	return ev
}

func TestMatchAlarm(t *testing.T) {
	t.Parallel()
	ts, err := ParseTargets(targetsJSON(t))
	require.NoError(t, err)
	tests := []struct {
		name  string
		event json.RawMessage
		want  string // pipeline, "" for no match
	}{
		{"AWS/SQS QueueName of the DLQ", alarmEvent("Stack-DlqDepth-1", "ALARM", map[string]string{"QueueName": "Stack-StepsDlq-XYZ.fifo"}), "agent-steps"},
		{"AgentDLQ Pipeline dimension", alarmEvent("x", "ALARM", map[string]string{"Pipeline": "agent-tasks"}), "agent-tasks"},
		{"alarm name holds the pipeline name", alarmEvent("agentdlq-agent-steps-new-dead-letters", "ALARM", nil), "agent-steps"},
		{"hot queue's name is not the DLQ", alarmEvent("other", "ALARM", map[string]string{"QueueName": "Stack-AgentTasks-ABC"}), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var ev event
			require.NoError(t, json.Unmarshal(tt.event, &ev))
			var a alarmDetail
			require.NoError(t, json.Unmarshal(ev.Detail, &a))
			got, ok := matchAlarm(ts, &a)
			assert.Equal(t, tt.want != "", ok)
			assert.Equal(t, tt.want, got.Pipeline.Name)
		})
	}
}

func newHandler(t *testing.T) (*Handler, *fakeSNS, *bytes.Buffer, *sqsfake.Fake) {
	t.Helper()
	ts, err := ParseTargets(targetsJSON(t))
	require.NoError(t, err)
	clock := newClock()
	queues := newFakeSQS(t, clock, map[string][]dlq.Message{ts[0].DLQURL: fixture(t), ts[1].DLQURL: many(3)})
	pub := &fakeSNS{}
	var metrics bytes.Buffer
	h := &Handler{Targets: ts, SQS: queues, Dest: store.Folder{Root: t.TempDir()}, SNS: pub, Metrics: &metrics, Now: clock.Now, Logger: quiet,
		Next: func(p string) []string { return []string{"the owner's step for " + p} }}
	return h, pub, &metrics, queues
}

func TestHandleSchedule(t *testing.T) {
	t.Parallel()
	h, pub, metrics, queues := newHandler(t)
	before := map[string]map[string]string{}
	for _, tg := range h.Targets {
		before[tg.DLQURL] = snapshot(queues, tg.DLQURL)
	}
	res, err := h.Handle(t.Context(), json.RawMessage(`{"version":"0","detail-type":"Scheduled Event","source":"aws.events","detail":{}}`))
	require.NoError(t, err)
	assert.Equal(t, "schedule", res.Trigger)
	require.Len(t, res.Pipelines, 2)
	assert.Equal(t, "agent-tasks", res.Pipelines[0].Pipeline)
	assert.Equal(t, 16, res.Pipelines[0].Messages)
	assert.Equal(t, 5, res.Pipelines[0].Exported)
	assert.True(t, strings.HasPrefix(res.Pipelines[0].ReportKey, "agent-tasks/reports/20261129T"))
	assert.Equal(t, 3, res.Pipelines[1].Messages)
	assert.Empty(t, pub.published, "a scheduled run pages nobody")
	for url, want := range before {
		assert.Equal(t, want, snapshot(queues, url))
	}
	docs := emfDocs(t, metrics.Bytes())
	assert.Len(t, docs, 2+7+1, "one document a pipeline, plus one a reason (7 and 1)")

	// The exports by day, the reports kept under reports/.
	keys, err := h.Dest.List(t.Context(), "agent-tasks/")
	require.NoError(t, err)
	var kinds []string
	for _, k := range keys {
		if rest, ok := strings.CutPrefix(k, "agent-tasks/reports/"); ok {
			kinds = append(kinds, "report"+rest[strings.LastIndex(rest, "."):])
			continue
		}
		kinds = append(kinds, strings.SplitN(k[len("agent-tasks/2026-11-29/"):], "-", 2)[0])
	}
	assert.ElementsMatch(t, []string{"evals", "manifest", "report.json", "report.md", "report.html"}, kinds)
}

func TestHandleAlarm(t *testing.T) {
	t.Parallel()
	h, pub, _, _ := newHandler(t)
	res, err := h.Handle(t.Context(), alarmEvent("Stack-AgentTasksDlqDepth", "ALARM", map[string]string{"QueueName": "Stack-AgentTasksDlq-ABC"}))
	require.NoError(t, err)
	assert.Equal(t, "alarm:Stack-AgentTasksDlqDepth", res.Trigger)
	require.Len(t, res.Pipelines, 1, "only the pipeline whose alarm fired")
	assert.True(t, res.Pipelines[0].Published)
	require.Len(t, pub.published, 1)
	in := pub.published[0]
	assert.Equal(t, "arn:aws:sns:us-east-1:1:tasks-alarms", aws.ToString(in.TopicArn))
	assert.Equal(t, "agentdlq agent-tasks: 16 dead letters, top schema_invalid (5)", aws.ToString(in.Subject))
	body := aws.ToString(in.Message)
	for _, want := range []string{
		"after alarm Stack-AgentTasksDlqDepth", "schema_invalid", "soonest 2026-11-30 04:00Z (in 16h0m)",
		"\nNext:\n  the owner's step for agent-tasks\n", "Report (HTML, open in a browser): ", "/agent-tasks/reports/20261129T", ".html\n", "Full report (JSON): ",
	} {
		assert.Contains(t, body, want)
	}

	// Back to OK: triaged, nobody paged.
	res, err = h.Handle(t.Context(), alarmEvent("Stack-AgentTasksDlqDepth", "OK", map[string]string{"QueueName": "Stack-AgentTasksDlq-ABC"}))
	require.NoError(t, err)
	assert.False(t, res.Pipelines[0].Published)
	assert.Len(t, pub.published, 1)

	// An alarm that matches nothing: every pipeline triaged, nothing published.
	res, err = h.Handle(t.Context(), alarmEvent("unrelated", "ALARM", nil))
	require.NoError(t, err)
	assert.Len(t, res.Pipelines, 2)
	assert.Len(t, pub.published, 1)
}

func TestHandleBadInput(t *testing.T) {
	t.Parallel()
	h, _, _, queues := newHandler(t)
	_, err := h.Handle(t.Context(), json.RawMessage(`{"Records":[]}`))
	assert.ErrorIs(t, err, errUnknownEvent)
	_, err = h.Handle(t.Context(), json.RawMessage(`[`))
	assert.ErrorIs(t, err, errUnknownEvent)

	// A missing DLQ fails its pipeline; the other one is still triaged.
	queues.RemoveQueue(h.Targets[1].DLQURL)
	res, err := h.Handle(t.Context(), json.RawMessage(`{"detail-type":"Scheduled Event","detail":{}}`))
	require.ErrorIs(t, err, triage.ErrQueueNotFound)
	require.Len(t, res.Pipelines, 2)
	assert.Equal(t, 16, res.Pipelines[0].Messages)
	assert.Contains(t, res.Pipelines[1].Error, "does not exist")
}

func emfDocs(t *testing.T, data []byte) []map[string]any {
	t.Helper()
	var docs []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var d map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &d))
		docs = append(docs, d)
	}
	return docs
}

func TestWriteEMF(t *testing.T) {
	t.Parallel()
	r := triage.Build(tagAll(fixture(t)), testPipeline(t, false), t0)
	var buf bytes.Buffer
	require.NoError(t, writeEMF(&buf, r, t0))
	docs := emfDocs(t, buf.Bytes())
	require.Len(t, docs, 8)
	first := docs[0]
	assert.Equal(t, map[string]any{
		"Timestamp": float64(t0.UnixMilli()),
		"CloudWatchMetrics": []any{map[string]any{
			"Namespace":  "AgentDLQ",
			"Dimensions": []any{[]any{"Pipeline"}},
			"Metrics": []any{
				map[string]any{"Name": "DLQMessages", "Unit": "Count"},
				map[string]any{"Name": "DLQOldestAgeSeconds", "Unit": "Seconds"},
				map[string]any{"Name": "DLQHoursToExpiry", "Unit": "None"},
				map[string]any{"Name": "DLQExpiringSoon", "Unit": "Count"},
				map[string]any{"Name": "RecurringPoisonGroups", "Unit": "Count"},
			},
		}},
	}, first["_aws"])
	assert.Equal(t, "agent-tasks", first["Pipeline"])
	assert.Equal(t, float64(16), first["DLQMessages"])
	assert.Equal(t, float64(320*3600), first["DLQOldestAgeSeconds"])
	assert.Equal(t, float64(16), first["DLQHoursToExpiry"])
	assert.Equal(t, float64(1), first["DLQExpiringSoon"])
	assert.Equal(t, float64(2), first["RecurringPoisonGroups"])

	byReason := map[string]float64{}
	for _, d := range docs[1:] {
		aws := d["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)
		assert.Equal(t, []any{[]any{"Pipeline", "Reason"}}, aws["Dimensions"])
		assert.Equal(t, []any{map[string]any{"Name": "DLQMessagesByReason", "Unit": "Count"}}, aws["Metrics"])
		byReason[d["Reason"].(string)] = d["DLQMessagesByReason"].(float64)
	}
	assert.Equal(t, float64(5), byReason[string(deadletter.ReasonSchemaInvalid)])
	assert.Len(t, byReason, 7)

	// An empty DLQ: no hours to expiry (nothing to lose).
	buf.Reset()
	require.NoError(t, writeEMF(&buf, triage.Build(nil, testPipeline(t, false), t0), t0.Add(time.Minute)))
	docs = emfDocs(t, buf.Bytes())
	require.Len(t, docs, 1)
	assert.NotContains(t, docs[0], "DLQHoursToExpiry")
	assert.Equal(t, float64(0), docs[0]["DLQMessages"])
}

// TestHandleCompactEvents covers the events the CDK app's rules send.
func TestHandleCompactEvents(t *testing.T) {
	t.Parallel()
	h, pub, _, _ := newHandler(t)
	res, err := h.Handle(t.Context(), json.RawMessage(`{"trigger":"schedule","pipeline":"agent-steps"}`))
	require.NoError(t, err)
	require.Len(t, res.Pipelines, 1)
	assert.Equal(t, "agent-steps", res.Pipelines[0].Pipeline)
	assert.Empty(t, pub.published)

	res, err = h.Handle(t.Context(), json.RawMessage(`{"trigger":"alarm","pipeline":"agent-tasks","alarm_name":"tasks-dlq-depth","alarm_arn":"arn:aws:cloudwatch:us-east-1:1:alarm:tasks-dlq-depth","state":"ALARM","time":"2026-11-29T12:00:00Z"}`))
	require.NoError(t, err)
	assert.Equal(t, "alarm:tasks-dlq-depth", res.Trigger)
	require.Len(t, pub.published, 1)
	assert.Equal(t, "arn:aws:sns:us-east-1:1:tasks-alarms", aws.ToString(pub.published[0].TopicArn))
	assert.Contains(t, aws.ToString(pub.published[0].Message), "after alarm tasks-dlq-depth")

	_, err = h.Handle(t.Context(), json.RawMessage(`{"trigger":"schedule","pipeline":"nope"}`))
	assert.ErrorIs(t, err, errUnknownEvent)
}

func TestScanBudget(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, false) // max_seconds 240
	wall := time.Now()
	assert.Equal(t, 240*time.Second, scanBudget(t.Context(), p, 0, 2, wall))
	assert.Equal(t, 10*time.Second, scanBudget(t.Context(), p, 10*time.Second, 2, wall))
	ctx, cancel := context.WithDeadline(t.Context(), wall.Add(140*time.Second))
	defer cancel()
	assert.Equal(t, 60*time.Second, scanBudget(ctx, p, 0, 2, wall), "(140 s - 20 s) shared by 2 pipelines")
	ctx2, cancel2 := context.WithDeadline(t.Context(), wall.Add(5*time.Second))
	defer cancel2()
	assert.Equal(t, time.Second, scanBudget(ctx2, p, 0, 1, wall), "at least a second")
}

// TestHandlePartialScan: the Lambda keeps working on a partial scan: no
// error, metrics emitted, the report kept and marked, the result says so.
func TestHandlePartialScan(t *testing.T) {
	t.Parallel()
	h, _, metrics, queues := newHandler(t)
	queues.Queue(h.Targets[1].DLQURL).Messages[0].VisibleAt = t0.Add(time.Hour) // held by another reader
	res, err := h.Handle(t.Context(), json.RawMessage(`{"trigger":"schedule","pipeline":"`+h.Targets[1].Pipeline.Name+`"}`))
	require.NoError(t, err, "a partial scan is reported, not failed")
	require.Len(t, res.Pipelines, 1)
	pr := res.Pipelines[0]
	assert.False(t, pr.Complete)
	assert.True(t, pr.Partial)
	assert.Equal(t, 2, pr.Messages, "what it saw")
	require.NotEmpty(t, pr.ReportKey)
	docs := emfDocs(t, metrics.Bytes())
	require.NotEmpty(t, docs)
	assert.Equal(t, false, docs[0]["ScanComplete"])
	r, _, err := triage.LatestReport(t.Context(), h.Dest, h.Targets[1].Pipeline.Name)
	require.NoError(t, err)
	assert.False(t, r.Complete)
	assert.Equal(t, triage.CauseInFlight, r.Scan.PartialCause)
}

func TestS3ConsoleURL(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "https://eu-west-1.console.aws.amazon.com/s3/object/evals-bucket?bucketType=general&prefix=agent-tasks%2Freports%2F20261129T120000Z-0a1b2c3d.html&region=eu-west-1",
		s3ConsoleURL("eu-west-1", "evals-bucket", "agent-tasks/reports/20261129T120000Z-0a1b2c3d.html"))
	assert.True(t, strings.HasPrefix(s3ConsoleURL("", "b", "k"), "https://console.aws.amazon.com/s3/object/b?"))
}

// fakeCloudWatch answers GetMetricData with the sum of a pipeline's
// Processed in two pages, recording the queries.
type fakeCloudWatch struct {
	byPipeline map[string][]float64
	err        error
	queries    []*cloudwatch.GetMetricDataInput
}

func (f *fakeCloudWatch) GetMetricData(_ context.Context, in *cloudwatch.GetMetricDataInput, _ ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error) {
	f.queries = append(f.queries, in)
	if f.err != nil {
		return nil, f.err
	}
	values := f.byPipeline[*in.MetricDataQueries[0].MetricStat.Metric.Dimensions[0].Value]
	out := &cloudwatch.GetMetricDataOutput{}
	if in.NextToken == nil && len(values) > 1 {
		values, out.NextToken = values[:1], aws.String("page-2")
	} else if in.NextToken != nil {
		values = values[1:]
	}
	out.MetricDataResults = []cwtypes.MetricDataResult{{Id: aws.String("processed"), Values: values, StatusCode: cwtypes.StatusCodeComplete}}
	return out, nil
}

// TestHandleStatesTheBudgetSpent: the scheduled triage reads each
// pipeline's Processed from CloudWatch over its SLO period, and its report
// (the kept JSON, and the result) states the budget spent; a failed read
// fails no triage and the report says why the budget is not known.
func TestHandleStatesTheBudgetSpent(t *testing.T) {
	t.Parallel()
	h, _, _, _ := newHandler(t)
	cw := &fakeCloudWatch{byPipeline: map[string][]float64{"agent-tasks": {600, 400}, "agent-steps": {30}}}
	h.Processed = processed.CloudWatch{API: cw, Logger: quiet}
	res, err := h.Handle(t.Context(), json.RawMessage(`{"trigger":"schedule","pipeline":"agent-tasks"}`))
	require.NoError(t, err)
	require.Len(t, res.Pipelines, 1)
	require.Len(t, cw.queries, 2, "two pages")
	q := cw.queries[0]
	assert.Equal(t, time.Hour, q.EndTime.Sub(*q.StartTime), "the SLO period: the last schedule_minutes")

	data, err := h.Dest.Get(t.Context(), res.Pipelines[0].ReportKey)
	require.NoError(t, err)
	var kept struct {
		SLO map[string]any `json:"slo"`
	}
	require.NoError(t, json.Unmarshal(data, &kept))
	require.NotNil(t, kept.SLO)
	assert.InDelta(t, 1000.0, kept.SLO["processed"], 0)
	dead := kept.SLO["dead_lettered"].(float64)
	want := math.Round(10*100*(100*dead/(1000+dead))/(100-99.9)) / 10
	require.Contains(t, kept.SLO, "budget_spent_percent")
	assert.InDelta(t, want, kept.SLO["budget_spent_percent"], 1e-9)
	require.NotNil(t, res.Pipelines[0].BudgetSpentPercent)
	assert.InDelta(t, want, *res.Pipelines[0].BudgetSpentPercent, 1e-9)

	// CloudWatch refuses: the triage is whole, its budget unknown, and why.
	h2, _, _, _ := newHandler(t)
	h2.Processed = processed.CloudWatch{API: &fakeCloudWatch{err: &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "arn:aws:iam::1:role/x"}}, Logger: quiet}
	res, err = h2.Handle(t.Context(), json.RawMessage(`{"trigger":"schedule","pipeline":"agent-tasks"}`))
	require.NoError(t, err, "a failed read of the processed count fails no triage")
	assert.Nil(t, res.Pipelines[0].BudgetSpentPercent)
	data, err = h2.Dest.Get(t.Context(), res.Pipelines[0].ReportKey)
	require.NoError(t, err)
	kept.SLO = nil
	require.NoError(t, json.Unmarshal(data, &kept))
	assert.NotContains(t, kept.SLO, "budget_spent_percent")
	assert.Equal(t, "the processed count could not be read: CloudWatch GetMetricData: AccessDeniedException (the caller needs cloudwatch:GetMetricData)", kept.SLO["budget_unknown"])
}
