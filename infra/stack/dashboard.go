package stack

import (
	"fmt"

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

// newDashboard creates the pipeline's dashboard: depth and age of the hot
// queue and the DLQ, dead letters by reason, expiry risk, the worker, redrive
// progress, and the alarms.
func (p *Pipeline) newDashboard(def pipeline.Pipeline, runbook string) {
	five := minutes(5)
	maxOf := func(m awscloudwatch.Metric, label string) awscloudwatch.IMetric {
		return m.With(&awscloudwatch.MetricOptions{Statistic: jsii.String("Maximum"), Label: jsii.String(label), Period: five})
	}
	sumOf := func(m awscloudwatch.Metric, label string) awscloudwatch.IMetric {
		return m.With(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Label: jsii.String(label), Period: five})
	}
	graph := func(title string, left, right []awscloudwatch.IMetric, annotations ...*awscloudwatch.HorizontalAnnotation) awscloudwatch.IWidget {
		props := &awscloudwatch.GraphWidgetProps{Title: jsii.String(title), Width: jsii.Number(12), Height: jsii.Number(6), Left: &left}
		if len(right) > 0 {
			props.Right = &right
		}
		if len(annotations) > 0 {
			props.LeftAnnotations = &annotations
		}
		return awscloudwatch.NewGraphWidget(props)
	}
	alarms := make([]interfacesawscloudwatch.IAlarmRef, 0, len(p.Alarms))
	for _, a := range AllAlarms() {
		alarms = append(alarms, p.Alarms[a])
	}
	text := fmt.Sprintf("# agentdlq · %[1]s (owner: %[2]s)\n"+
		"Dead letters: `agentdlq triage --pipeline %[1]s` · redrive plan: `agentdlq redrive plan --pipeline %[1]s` (owner only, through the redrive role) · runbook: [%[3]s](%[3]s)",
		def.Name, def.Owner, runbook)

	p.Dashboard = awscloudwatch.NewDashboard(p.Construct, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{
		Widgets: &[]*[]awscloudwatch.IWidget{
			{
				awscloudwatch.NewTextWidget(&awscloudwatch.TextWidgetProps{Markdown: jsii.String(text), Width: jsii.Number(12), Height: jsii.Number(3)}),
				awscloudwatch.NewAlarmStatusWidget(&awscloudwatch.AlarmStatusWidgetProps{Title: jsii.String("Alarms"), Alarms: &alarms, Width: jsii.Number(12), Height: jsii.Number(3)}),
			},
			{
				graph("Depth: hot queue and DLQ",
					[]awscloudwatch.IMetric{maxOf(p.HotQueue.MetricApproximateNumberOfMessagesVisible(nil), "hot visible"),
						maxOf(p.HotQueue.MetricApproximateNumberOfMessagesNotVisible(nil), "hot in flight")},
					[]awscloudwatch.IMetric{maxOf(p.DLQ.MetricApproximateNumberOfMessagesVisible(nil), "DLQ visible")}),
				graph("Age of the oldest message (s)",
					[]awscloudwatch.IMetric{maxOf(p.HotQueue.MetricApproximateAgeOfOldestMessage(nil), "hot queue")},
					[]awscloudwatch.IMetric{maxOf(p.DLQ.MetricApproximateAgeOfOldestMessage(nil), "DLQ (time in the DLQ, not retention)")}),
			},
			{
				graph("Dead letters by reason",
					[]awscloudwatch.IMetric{searchByReason(def, "DeadLettered", "Sum", "dead-lettered by the worker")},
					[]awscloudwatch.IMetric{searchByReason(def, "DLQMessagesByReason", "Maximum", "in the DLQ (triage)")}),
				graph("Expiry risk",
					[]awscloudwatch.IMetric{agentMetric(def, "DLQHoursToExpiry", "Minimum", five).With(&awscloudwatch.MetricOptions{Label: jsii.String("hours to the soonest expiry")})},
					[]awscloudwatch.IMetric{agentMetric(def, "DLQExpiringSoon", "Maximum", five).With(&awscloudwatch.MetricOptions{Label: jsii.String("expiring within the warning window")}),
						agentMetric(def, "RecurringPoisonGroups", "Maximum", five).With(&awscloudwatch.MetricOptions{Label: jsii.String("recurring poison groups")})},
					&awscloudwatch.HorizontalAnnotation{Value: jsii.Number(float64(def.Alarms.ExpiryRiskHours)), Label: jsii.String("expiry-risk alarm")}),
			},
			{
				graph("Worker",
					[]awscloudwatch.IMetric{sumOf(p.Worker.MetricErrors(nil), "errors"), sumOf(p.Worker.MetricThrottles(nil), "throttles"),
						sumOf(agentMetric(def, "DLQSendFailures", "Sum", five), "DLQ send failures")},
					[]awscloudwatch.IMetric{sumOf(agentMetric(def, "Processed", "Sum", five), "processed"), sumOf(agentMetric(def, "Retried", "Sum", five), "retried"),
						sumOf(agentMetric(def, "DuplicatesSkipped", "Sum", five), "duplicates skipped")}),
				// Move tasks publish no metric of their own: a redrive shows as
				// messages deleted from the DLQ (moved or selectively redriven)
				// and sent to the hot queue.
				graph("Redrive tasks: messages leaving the DLQ",
					[]awscloudwatch.IMetric{sumOf(p.DLQ.MetricNumberOfMessagesDeleted(nil), "deleted from the DLQ (redriven)")},
					[]awscloudwatch.IMetric{sumOf(p.HotQueue.MetricNumberOfMessagesSent(nil), "sent to the hot queue")}),
			},
		},
	})
}
