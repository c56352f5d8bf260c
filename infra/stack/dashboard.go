package stack

import (
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/interfaces/interfacesawscloudwatch"
	"github.com/aws/jsii-runtime-go"

	"github.com/agentdlq/agentdlq/pipeline"
)

// searchByReason is a SEARCH over a metric of the pipeline with the Reason
// dimension: one line per reason that occurred, whatever reasons exist.
func searchByReason(def pipeline.Pipeline, metric, statistic, label string) awscloudwatch.MathExpression {
	return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String(fmt.Sprintf(`SEARCH('{%s,Pipeline,Reason} MetricName="%s" Pipeline="%s"', '%s', 300)`,
			MetricNamespace, metric, def.Name, statistic)),
		Label:  jsii.String(label),
		Period: minutes(5),
	})
}

// The titles of the dashboard's graphs; RUNBOOK.md names them.
const (
	GraphHotQueue       = "Hot queue: depth and age"
	GraphDLQ            = "DLQ: depth and age"
	GraphByReason       = "Dead letters by reason"
	GraphExpiryRisk     = "Expiry risk"
	GraphWorker         = "Worker: errors and outcomes"
	GraphWorkerDuration = "Worker duration (ms): p50 and p99"
	GraphRedrive        = "Redrive tasks: messages leaving the DLQ"
	GraphESM            = "Event source mapping: events polled, invoked, failed, dropped, deleted"
	GraphSLOBurnRate    = "Dead-letter SLO: burn rate"
	GraphSLOEvents      = "Dead-letter SLO: processed (good) and dead-lettered (bad) tasks"
)

// alarmRefs are the pipeline's alarms for the dashboard's status widget:
// every alarm AllAlarms names, then the breaker's when it has one.
func (p *Pipeline) alarmRefs() []interfacesawscloudwatch.IAlarmRef {
	alarms := make([]interfacesawscloudwatch.IAlarmRef, 0, len(p.Alarms))
	for _, a := range AllAlarms() {
		alarms = append(alarms, p.Alarms[a])
	}
	if a, ok := p.Alarms[AlarmBreakerOpen]; ok {
		alarms = append(alarms, a)
	}
	return alarms
}

// graph draws left and right metrics; an annotation with a label that ends
// in "(s)" goes on the right axis (ages), any other on the left.
func graph(title string, left, right []awscloudwatch.IMetric, annotations ...*awscloudwatch.HorizontalAnnotation) awscloudwatch.IWidget {
	props := &awscloudwatch.GraphWidgetProps{Title: jsii.String(title), Width: jsii.Number(12), Height: jsii.Number(6), Left: &left,
		// Depth and counts on the left, ages on the right: each its own axis.
		LeftYAxis: &awscloudwatch.YAxisProps{Min: jsii.Number(0)}, RightYAxis: &awscloudwatch.YAxisProps{Min: jsii.Number(0)}}
	if len(right) > 0 {
		props.Right = &right
	}
	var onLeft, onRight []*awscloudwatch.HorizontalAnnotation
	for _, a := range annotations {
		if strings.HasSuffix(*a.Label, "(s)") {
			onRight = append(onRight, a)
		} else {
			onLeft = append(onLeft, a)
		}
	}
	if len(onLeft) > 0 {
		props.LeftAnnotations = &onLeft
	}
	if len(onRight) > 0 {
		props.RightAnnotations = &onRight
	}
	return awscloudwatch.NewGraphWidget(props)
}

// newDashboard creates the pipeline's dashboard: each queue's depth beside
// its age, dead letters by reason (live from the worker, and in the DLQ as
// of the last triage), expiry risk, the worker's outcomes and duration,
// redrive progress, and the alarms.
func (p *Pipeline) newDashboard(def pipeline.Pipeline, runbook string) {
	five := minutes(5)
	maxOf := func(m awscloudwatch.Metric, label string) awscloudwatch.IMetric {
		return m.With(&awscloudwatch.MetricOptions{Statistic: jsii.String("Maximum"), Label: jsii.String(label), Period: five})
	}
	sumOf := func(m awscloudwatch.Metric, label string) awscloudwatch.IMetric {
		return m.With(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Label: jsii.String(label), Period: five})
	}
	alarms := p.alarmRefs()
	text := fmt.Sprintf("# agentdlq · %[1]s (owner: %[2]s)\n"+
		"Dead letters: `agentdlq triage --pipeline %[1]s` · redrive plan: `agentdlq redrive plan --pipeline %[1]s` (owner only, through the redrive role) · runbook: [%[3]s](%[3]s)",
		def.Name, def.Owner, runbook)

	var burnRates []awscloudwatch.IMetric
	var burnLines []*awscloudwatch.HorizontalAnnotation
	for _, b := range burnAlarms {
		for _, w := range []int{b.long, b.short} {
			burnRates = append(burnRates, p.burnRate(w).With(&awscloudwatch.MetricOptions{Label: jsii.String(fmt.Sprintf("over %d min", w))}))
		}
		burnLines = append(burnLines, &awscloudwatch.HorizontalAnnotation{Value: jsii.Number(b.threshold), Label: jsii.String(b.anchor + " alarm")})
	}
	p.Dashboard = awscloudwatch.NewDashboard(p.Construct, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{
		Widgets: &[]*[]awscloudwatch.IWidget{
			{
				awscloudwatch.NewTextWidget(&awscloudwatch.TextWidgetProps{Markdown: jsii.String(text), Width: jsii.Number(12), Height: jsii.Number(3)}),
				awscloudwatch.NewAlarmStatusWidget(&awscloudwatch.AlarmStatusWidgetProps{Title: jsii.String("Alarms"), Alarms: &alarms, Width: jsii.Number(12), Height: jsii.Number(3)}),
			},
			{
				graph(GraphHotQueue,
					[]awscloudwatch.IMetric{maxOf(p.HotQueue.MetricApproximateNumberOfMessagesVisible(nil), "visible"),
						maxOf(p.HotQueue.MetricApproximateNumberOfMessagesNotVisible(nil), "in flight")},
					[]awscloudwatch.IMetric{maxOf(p.HotQueue.MetricApproximateAgeOfOldestMessage(nil), "age of the oldest (s)")},
					&awscloudwatch.HorizontalAnnotation{Value: jsii.Number(float64(def.Alarms.HotOldestAgeSeconds)), Label: jsii.String("hot-backlog-age alarm (s)")}),
				graph(GraphDLQ,
					[]awscloudwatch.IMetric{maxOf(p.DLQ.MetricApproximateNumberOfMessagesVisible(nil), "visible")},
					[]awscloudwatch.IMetric{maxOf(p.DLQ.MetricApproximateAgeOfOldestMessage(nil), "age of the oldest (s): time in the DLQ, not retention")}),
			},
			{
				// The worker emits DeadLettered by reason with every batch:
				// live. DLQMessagesByReason is what the triage counted in the
				// DLQ: it moves only when the triage runs.
				graph(fmt.Sprintf("%s (live: the worker's; in the DLQ: refreshed when triage runs, every %d min)", GraphByReason, def.Triage.ScheduleMinutes),
					[]awscloudwatch.IMetric{searchByReason(def, "DeadLettered", "Sum", "dead-lettered by the worker (live)")},
					[]awscloudwatch.IMetric{searchByReason(def, "DLQMessagesByReason", "Maximum", "in the DLQ (as of the last triage)")}),
				graph("Expiry risk",
					[]awscloudwatch.IMetric{agentMetric(def, "DLQHoursToExpiry", "Minimum", five).With(&awscloudwatch.MetricOptions{Label: jsii.String("hours to the soonest expiry")})},
					[]awscloudwatch.IMetric{agentMetric(def, "DLQExpiringSoon", "Maximum", five).With(&awscloudwatch.MetricOptions{Label: jsii.String("expiring within the warning window")}),
						agentMetric(def, "RecurringPoisonGroups", "Maximum", five).With(&awscloudwatch.MetricOptions{Label: jsii.String("recurring poison groups")})},
					&awscloudwatch.HorizontalAnnotation{Value: jsii.Number(float64(def.Alarms.ExpiryRiskHours)), Label: jsii.String("expiry-risk alarm")}),
			},
			{
				graph(GraphWorker,
					[]awscloudwatch.IMetric{sumOf(p.Worker.MetricErrors(nil), "errors"), sumOf(p.Worker.MetricThrottles(nil), "throttles"),
						sumOf(agentMetric(def, "DLQSendFailures", "Sum", five), "DLQ send failures")},
					[]awscloudwatch.IMetric{sumOf(agentMetric(def, "Processed", "Sum", five), "processed"), sumOf(agentMetric(def, "Retried", "Sum", five), "retried"),
						sumOf(agentMetric(def, "DuplicatesSkipped", "Sum", five), "duplicates skipped"),
						sumOf(agentMetric(def, "Requeued", "Sum", five), "requeued after a Retry-After")}),
				graph(GraphWorkerDuration,
					[]awscloudwatch.IMetric{
						p.Worker.MetricDuration(&awscloudwatch.MetricOptions{Statistic: jsii.String("p50"), Label: jsii.String("p50"), Period: five}),
						p.Worker.MetricDuration(&awscloudwatch.MetricOptions{Statistic: jsii.String("p99"), Label: jsii.String("p99"), Period: five}),
					}, nil,
					&awscloudwatch.HorizontalAnnotation{Value: jsii.Number(float64(def.WorkerTimeoutSeconds * 1000)), Label: jsii.String("timeout")}),
			},
			{
				// Move tasks publish no metric of their own: a redrive shows as
				// messages deleted from the DLQ (moved or selectively redriven)
				// and sent to the hot queue.
				graph(GraphRedrive,
					[]awscloudwatch.IMetric{sumOf(p.DLQ.MetricNumberOfMessagesDeleted(nil), "deleted from the DLQ (redriven)")},
					[]awscloudwatch.IMetric{sumOf(p.HotQueue.MetricNumberOfMessagesSent(nil), "sent to the hot queue")}),
				// The mapping's own counts (MetricsConfig EventCount): what
				// it read, handed to the worker, got back failed, dropped
				// and deleted. Failed and dropped on the left, beside their
				// alarms; the flow on the right.
				graph(GraphESM,
					[]awscloudwatch.IMetric{sumOf(p.esmMetric(ESMFailedInvokeEventCount, "Sum", five), "failed (batch item failures, throttles, failed invocations)"),
						sumOf(p.esmMetric(ESMDroppedEventCount, "Sum", five), "dropped")},
					[]awscloudwatch.IMetric{sumOf(p.esmMetric(ESMPolledEventCount, "Sum", five), "polled"),
						sumOf(p.esmMetric(ESMInvokedEventCount, "Sum", five), "invoked"),
						sumOf(p.esmMetric(ESMDeletedEventCount, "Sum", five), "deleted")},
					&awscloudwatch.HorizontalAnnotation{Value: jsii.Number(float64(def.Alarms.ESMDroppedEvents)), Label: jsii.String("esm-dropped-events alarm")}),
			},
			{
				// The SLO's burn rate over each look-back window (1 spends
				// the budget exactly over the 30 days), against the
				// burn-rate alarms; and the SLI's good and bad events.
				graph(fmt.Sprintf("%s (target %g %% over %d days)", GraphSLOBurnRate, def.SLO.TargetPercent, SLOIntervalDays), burnRates, nil, burnLines...),
				graph(GraphSLOEvents,
					[]awscloudwatch.IMetric{sumOf(agentMetric(def, "DeadLettered", "Sum", five), "dead-lettered (bad)")},
					[]awscloudwatch.IMetric{sumOf(agentMetric(def, "Processed", "Sum", five), "processed (good)")}),
			},
		},
	})
}
