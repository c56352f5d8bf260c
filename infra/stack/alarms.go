package stack

import (
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/jsii-runtime-go"

	"github.com/agentdlq/agentdlq/pipeline"
)

// MetricNamespace is the namespace of the worker's and the triage's embedded
// metric format metrics (docs/wiring.md).
const MetricNamespace = "AgentDLQ"

// The alarms of a pipeline, by the anchor of their section in RUNBOOK.md.
// Every alarm description links RunbookURL#<anchor>.
const (
	AlarmDLQDepth        = "dlq-depth"
	AlarmNewDeadLetters  = "new-dead-letters"
	AlarmDLQAge          = "dlq-age"
	AlarmExpiryRisk      = "expiry-risk"
	AlarmHotBacklogAge   = "hot-backlog-age"
	AlarmWorkerErrors    = "worker-errors"
	AlarmWorkerThrottles = "worker-throttles"
	AlarmDLQSendFailures = "dlq-send-failures"
	// The event source mapping's own alarms, on its EventCount metrics.
	AlarmESMDroppedEvents = "esm-dropped-events"
	AlarmESMFailedEvents  = "esm-failed-events"
	// AlarmBreakerOpen: a dependency's circuit breaker opened (only for a
	// pipeline whose breaker is on; not in AllAlarms).
	AlarmBreakerOpen = "breaker-open"
)

// AllAlarms lists the alarm anchors in the order of RUNBOOK.md.
func AllAlarms() []string {
	return []string{AlarmDLQDepth, AlarmNewDeadLetters, AlarmDLQAge, AlarmExpiryRisk,
		AlarmHotBacklogAge, AlarmWorkerErrors, AlarmWorkerThrottles, AlarmDLQSendFailures,
		AlarmESMDroppedEvents, AlarmESMFailedEvents, AlarmSLOFastBurn, AlarmSLOSlowBurn}
}

// The event source mapping's metrics with MetricsConfig EventCount on
// (namespace AWS/Lambda, dimension EventSourceMappingUUID; the Lambda
// developer guide, "Event source mapping metrics"). The local event
// source mapping counts the same names (esm.EventCounts).
const (
	ESMDimension              = "EventSourceMappingUUID"
	ESMPolledEventCount       = "PolledEventCount"
	ESMInvokedEventCount      = "InvokedEventCount"
	ESMFilteredOutEventCount  = "FilteredOutEventCount"
	ESMFailedInvokeEventCount = "FailedInvokeEventCount"
	ESMDroppedEventCount      = "DroppedEventCount"
	ESMDeletedEventCount      = "DeletedEventCount"
)

// esmMetric is one of the worker's event source mapping's EventCount
// metrics.
func (p *Pipeline) esmMetric(name, statistic string, period awscdk.Duration) awscloudwatch.Metric {
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace:     jsii.String("AWS/Lambda"),
		MetricName:    jsii.String(name),
		DimensionsMap: &map[string]*string{ESMDimension: p.EventSource.EventSourceMappingId()},
		Statistic:     jsii.String(statistic),
		Period:        period,
	})
}

// dlqAlarms start the triage Lambda when they go to ALARM.
var dlqAlarms = []string{AlarmDLQDepth, AlarmNewDeadLetters, AlarmDLQAge, AlarmExpiryRisk}

func minutes(n int) awscdk.Duration { return awscdk.Duration_Minutes(jsii.Number(float64(n))) }

// agentMetric is one of the worker's or the triage's EMF metrics of the pipeline.
func agentMetric(def pipeline.Pipeline, name, statistic string, period awscdk.Duration) awscloudwatch.Metric {
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace:     jsii.String(MetricNamespace),
		MetricName:    jsii.String(name),
		DimensionsMap: &map[string]*string{"Pipeline": jsii.String(def.Name)},
		Statistic:     jsii.String(statistic),
		Period:        period,
	})
}

// alarmSpec is one alarm: what it watches, when it fires, and what the person
// paged runs first.
type alarmSpec struct {
	anchor    string
	metric    awscloudwatch.IMetric
	threshold int
	op        awscloudwatch.ComparisonOperator
	missing   awscloudwatch.TreatMissingData
	what      string // the condition, in words
	first     string // what to run first
}

// newAlarms creates the pipeline's alarms, each with alarm and OK actions to
// the pipeline's topic and a description that says what to run first and
// links its runbook section.
func (p *Pipeline) newAlarms(def pipeline.Pipeline, runbook, bucket string) {
	name := def.Name
	triageCmd := "agentdlq triage --pipeline " + name
	five := minutes(5)
	newDeadLetters, esmFailedPercent := p.alarmExpressions(def)
	ge := awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD
	notBreaching := awscloudwatch.TreatMissingData_NOT_BREACHING
	specs := []alarmSpec{
		{AlarmDLQDepth, p.DLQ.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Statistic: jsii.String("Maximum"), Period: minutes(1)}),
			def.Alarms.DLQDepth, ge, notBreaching,
			fmt.Sprintf("the DLQ holds at least %d dead letter(s)", def.Alarms.DLQDepth),
			triageCmd + " (the triage Lambda has already posted a summary to this topic)"},
		{AlarmNewDeadLetters, newDeadLetters, def.Alarms.NewDeadLetters, ge, notBreaching,
			fmt.Sprintf("at least %d new dead letter(s) in 5 minutes while the DLQ may already be non-empty", def.Alarms.NewDeadLetters),
			triageCmd + " and compare the reasons with the last report"},
		{AlarmDLQAge, p.DLQ.MetricApproximateAgeOfOldestMessage(&awscloudwatch.MetricOptions{Statistic: jsii.String("Maximum"), Period: five}),
			def.Alarms.DLQOldestAgeSeconds, ge, notBreaching,
			fmt.Sprintf("a dead letter has waited in the DLQ for at least %d s", def.Alarms.DLQOldestAgeSeconds),
			"agentdlq redrive plan --pipeline " + name},
		// The triage emits DLQHoursToExpiry when it finds dead letters; an empty
		// DLQ (no data) is no risk, and a DLQ that is not empty but not scanned
		// is already paged by dlq-depth.
		{AlarmExpiryRisk, agentMetric(def, "DLQHoursToExpiry", "Minimum", minutes(def.Triage.ScheduleMinutes)),
			def.Alarms.ExpiryRiskHours, awscloudwatch.ComparisonOperator_LESS_THAN_THRESHOLD, notBreaching,
			fmt.Sprintf("retention deletes a dead letter within %d hours", def.Alarms.ExpiryRiskHours),
			triageCmd + " --export-evals s3://" + bucket + " (evals land under " + name + "/ beside the Lambda's), then redrive or reject before retention deletes the evidence"},
		{AlarmHotBacklogAge, p.HotQueue.MetricApproximateAgeOfOldestMessage(&awscloudwatch.MetricOptions{Statistic: jsii.String("Maximum"), Period: five}),
			def.Alarms.HotOldestAgeSeconds, ge, notBreaching,
			fmt.Sprintf("the oldest task on the hot queue is at least %d s old", def.Alarms.HotOldestAgeSeconds),
			"aws logs tail " + *p.WorkerLogs.LogGroupName() + " --since 30m (check worker-errors and worker-throttles first)"},
		{AlarmWorkerErrors, p.Worker.MetricErrors(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: five}),
			def.Alarms.WorkerErrors, ge, notBreaching,
			fmt.Sprintf("the worker failed at least %d whole invocation(s) in 5 minutes (a failed invocation retries the whole batch)", def.Alarms.WorkerErrors),
			"aws logs tail " + *p.WorkerLogs.LogGroupName() + " --since 15m --filter-pattern ERROR"},
		{AlarmWorkerThrottles, p.Worker.MetricThrottles(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: five}),
			def.Alarms.WorkerThrottles, ge, notBreaching,
			fmt.Sprintf("the worker was throttled at least %d time(s) in 5 minutes", def.Alarms.WorkerThrottles),
			"aws lambda get-account-settings and aws lambda get-function-concurrency --function-name " + *p.Worker.FunctionName()},
		{AlarmDLQSendFailures, agentMetric(def, "DLQSendFailures", "Sum", five),
			def.Alarms.DLQSendFailures, ge, notBreaching,
			fmt.Sprintf("the worker failed to send at least %d dead letter(s) to the DLQ in 5 minutes (they stay on the hot queue and are retried)", def.Alarms.DLQSendFailures),
			"aws logs tail " + *p.WorkerLogs.LogGroupName() + " --since 15m --filter-pattern DLQSendFailures"},
		{AlarmESMDroppedEvents, p.esmMetric(ESMDroppedEventCount, "Sum", five),
			def.Alarms.ESMDroppedEvents, ge, notBreaching,
			fmt.Sprintf("the event source mapping dropped at least %d event(s) in 5 minutes without the worker finishing them", def.Alarms.ESMDroppedEvents),
			"aws lambda get-event-source-mapping --uuid " + *p.EventSource.EventSourceMappingId() + " (its State and LastProcessingResult), then " + triageCmd},
		{AlarmESMFailedEvents, esmFailedPercent,
			def.Alarms.ESMFailedPercent, ge, notBreaching,
			fmt.Sprintf("at least %d %% of the events the event source mapping invoked the worker with came back failed in 5 minutes (batch item failures, throttles, failed invocations: each a receive spent)", def.Alarms.ESMFailedPercent),
			"check worker-throttles and worker-errors, then aws logs tail " + *p.WorkerLogs.LogGroupName() + " --since 15m --filter-pattern retried"},
	}
	if def.Breaker.Enabled {
		// BreakerOpened is the worker's count of moves to open (package
		// breaker), by Pipeline (and by Dependency, which the alarm cannot
		// name in advance).
		specs = append(specs, alarmSpec{AlarmBreakerOpen, agentMetric(def, "BreakerOpened", "Sum", five), 1, ge, notBreaching,
			"a dependency's circuit breaker opened in the last 5 minutes: the tasks that need it are deferred, no receive spent",
			"agentdlq breaker status --pipeline " + name + " --dependency D (the dependency is in the worker's \"breaker open\" log line)"})
	}
	action := awscloudwatchactions.NewSnsAction(p.AlarmTopic)
	for _, s := range specs {
		alarm := awscloudwatch.NewAlarm(p.Construct, jsii.String("Alarm-"+s.anchor), &awscloudwatch.AlarmProps{
			Metric:             s.metric,
			Threshold:          jsii.Number(float64(s.threshold)),
			ComparisonOperator: s.op,
			EvaluationPeriods:  jsii.Number(1),
			DatapointsToAlarm:  jsii.Number(1),
			TreatMissingData:   s.missing,
			AlarmDescription:   jsii.String(alarmDescription(name, s, runbook)),
		})
		alarm.AddAlarmAction(action)
		alarm.AddOkAction(action)
		p.Alarms[s.anchor] = alarm
	}
	for _, a := range dlqAlarms {
		p.DLQAlarms = append(p.DLQAlarms, p.Alarms[a])
	}
}

// alarmExpressions are the metric math of two alarms: the new dead letters
// in 5 minutes, and the share of the invoked events that came back failed.
func (p *Pipeline) alarmExpressions(def pipeline.Pipeline) (newDeadLetters, esmFailedPercent awscloudwatch.MathExpression) {
	five := minutes(5)
	dlqVisible := p.DLQ.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Statistic: jsii.String("Maximum"), Period: five})
	dlqHidden := p.DLQ.MetricApproximateNumberOfMessagesNotVisible(&awscloudwatch.MetricOptions{Statistic: jsii.String("Maximum"), Period: five})
	// New dead letters: the worker's own dead letters (DeadLettered), and the
	// broker's moves after maxReceiveCount, which no metric counts
	// (NumberOfMessagesSent on a DLQ misses them): they show as a rise of the
	// DLQ's visible + in-flight count (in-flight included, so that a triage
	// scan, which hides messages for a while, does not look like a rise).
	newDeadLetters = awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String("MAX([FILL(dl, 0), DIFF(FILL(vis, 0) + FILL(hid, 0))])"),
		UsingMetrics: &map[string]awscloudwatch.IMetric{
			"dl":  agentMetric(def, "DeadLettered", "Sum", five),
			"vis": dlqVisible,
			"hid": dlqHidden,
		},
		Label:  jsii.String("new dead letters"),
		Period: five,
	})
	// The share of the invoked events that came back failed: failed
	// invocations (a throttle, a crash, a timeout) and batch item failures
	// alike, each a receive spent towards maxReceiveCount. No invocation,
	// no share.
	esmFailedPercent = awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String("IF(FILL(invoked, 0) > 0, 100 * FILL(failed, 0) / invoked, 0)"),
		UsingMetrics: &map[string]awscloudwatch.IMetric{
			"failed":  p.esmMetric(ESMFailedInvokeEventCount, "Sum", five),
			"invoked": p.esmMetric(ESMInvokedEventCount, "Sum", five),
		},
		Label:  jsii.String("failed events (% of invoked)"),
		Period: five,
	})
	return newDeadLetters, esmFailedPercent
}

// alarmDescription is what the person paged reads first.
func alarmDescription(name string, s alarmSpec, runbook string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "agentdlq %s [%s]: %s. ", name, s.anchor, s.what)
	fmt.Fprintf(&b, "Run first: %s. ", s.first)
	fmt.Fprintf(&b, "Runbook: %s#%s", runbook, s.anchor)
	return b.String()
}
