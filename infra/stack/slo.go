package stack

import (
	"fmt"
	"strconv"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapplicationsignals"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/jsii-runtime-go"

	"github.com/agentdlq/agentdlq/pipeline"
)

// The dead-letter SLO's burn-rate alarms, by their runbook anchors.
const (
	AlarmSLOFastBurn = "slo-fast-burn"
	AlarmSLOSlowBurn = "slo-slow-burn"
)

// SLOIntervalDays is the SLO's rolling interval.
const SLOIntervalDays = 30

// burnAlarm is one multi-window burn-rate alarm: it fires when the burn
// rate over both the long and the short look-back window reaches the
// threshold (the long window says the budget is really going, the short
// one that it still is, so the alarm clears soon after the burn stops).
// The numbers are the Google SRE workbook's for a 30-day objective: 14.4
// over an hour spends 2 % of the month's budget in that hour; 6 over six
// hours, 5 % in six hours.
type burnAlarm struct {
	anchor      string
	long, short int // look-back windows, minutes
	threshold   float64
	what        string
}

var burnAlarms = []burnAlarm{
	{AlarmSLOFastBurn, 60, 5, 14.4, "2 % of the 30-day error budget in an hour"},
	{AlarmSLOSlowBurn, 360, 30, 6, "5 % of the 30-day error budget in six hours"},
}

// SLOBurnRateWindows are the look-back windows (minutes) of the SLO's
// burn-rate configurations: those of the burn-rate alarms.
func SLOBurnRateWindows() []int {
	var out []int
	for _, b := range burnAlarms {
		out = append(out, b.long, b.short)
	}
	return out
}

// sloMetricStat is one of the worker's EMF counts of the pipeline, summed
// a minute, as an SLI query.
func sloMetricStat(def pipeline.Pipeline, id, name string) *awsapplicationsignals.CfnServiceLevelObjective_MetricDataQueryProperty {
	return &awsapplicationsignals.CfnServiceLevelObjective_MetricDataQueryProperty{
		Id: jsii.String(id),
		MetricStat: &awsapplicationsignals.CfnServiceLevelObjective_MetricStatProperty{
			Metric: &awsapplicationsignals.CfnServiceLevelObjective_MetricProperty{
				Namespace: jsii.String(MetricNamespace), MetricName: jsii.String(name),
				Dimensions: &[]*awsapplicationsignals.CfnServiceLevelObjective_DimensionProperty{{Name: jsii.String("Pipeline"), Value: jsii.String(def.Name)}},
			},
			Period: jsii.Number(60), Stat: jsii.String("Sum"),
		},
		ReturnData: jsii.Bool(false),
	}
}

// newSLO defines the pipeline's dead-letter service level objective, a
// request-based CloudWatch Application Signals SLO on the worker's EMF
// metrics: every task the worker processed is a good request (Processed),
// every task it dead-lettered a bad one (DeadLettered), the total their
// sum; the goal is slo.target_percent over a rolling 30 days. Its
// burn-rate alarms go to the pipeline's topic like the others.
//
// Application Signals requires the SLO's name; it is made from the
// construct's path (unique in the app, as the stack's name is in the
// account), not written by hand.
func (p *Pipeline) newSLO(def pipeline.Pipeline, runbook string) {
	name := awscdk.Names_UniqueResourceName(p.Construct, &awscdk.UniqueResourceNameOptions{MaxLength: jsii.Number(100), Separator: jsii.String("-")})
	p.SLOName = *name + "-dead-letters"
	total := []any{
		sloMetricStat(def, "processed", "Processed"),
		sloMetricStat(def, "deadlettered", "DeadLettered"),
		&awsapplicationsignals.CfnServiceLevelObjective_MetricDataQueryProperty{
			Id: jsii.String("total"), Expression: jsii.String("FILL(processed, 0) + FILL(deadlettered, 0)"), ReturnData: jsii.Bool(true),
		},
	}
	bad := sloMetricStat(def, "bad", "DeadLettered")
	bad.ReturnData = jsii.Bool(true)
	var windows []any
	for _, m := range SLOBurnRateWindows() {
		windows = append(windows, &awsapplicationsignals.CfnServiceLevelObjective_BurnRateConfigurationProperty{LookBackWindowMinutes: jsii.Number(float64(m))})
	}
	p.SLO = awsapplicationsignals.NewCfnServiceLevelObjective(p.Construct, jsii.String("SLO"), &awsapplicationsignals.CfnServiceLevelObjectiveProps{
		Name: jsii.String(p.SLOName),
		Description: jsii.String(fmt.Sprintf("agentdlq %s: at least %g %% of the tasks the worker finishes are processed, not dead-lettered (good: Processed, bad: DeadLettered, AgentDLQ metrics), over a rolling %d days",
			def.Name, def.SLO.TargetPercent, SLOIntervalDays)),
		RequestBasedSli: &awsapplicationsignals.CfnServiceLevelObjective_RequestBasedSliProperty{
			RequestBasedSliMetric: &awsapplicationsignals.CfnServiceLevelObjective_RequestBasedSliMetricProperty{
				TotalRequestCountMetric:     &total,
				MonitoredRequestCountMetric: &awsapplicationsignals.CfnServiceLevelObjective_MonitoredRequestCountMetricProperty{BadCountMetric: &[]any{bad}},
			},
		},
		Goal: &awsapplicationsignals.CfnServiceLevelObjective_GoalProperty{
			AttainmentGoal: jsii.Number(def.SLO.TargetPercent),
			Interval: &awsapplicationsignals.CfnServiceLevelObjective_IntervalProperty{
				RollingInterval: &awsapplicationsignals.CfnServiceLevelObjective_RollingIntervalProperty{Duration: jsii.Number(SLOIntervalDays), DurationUnit: jsii.String("DAY")},
			},
		},
		BurnRateConfigurations: &windows,
	})

	action := awscloudwatchactions.NewSnsAction(p.AlarmTopic)
	for _, b := range burnAlarms {
		expr := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
			Expression:   jsii.String("MIN([long, short])"),
			UsingMetrics: &map[string]awscloudwatch.IMetric{"long": p.burnRate(b.long), "short": p.burnRate(b.short)},
			Label:        jsii.String(fmt.Sprintf("burn rate over %d and %d min (the lower)", b.long, b.short)),
			Period:       minutes(5),
		})
		s := alarmSpec{anchor: b.anchor,
			what: fmt.Sprintf("the dead-letter SLO (%g %%) burns its error budget at least %g times too fast over both %d and %d minutes: %s",
				def.SLO.TargetPercent, b.threshold, b.long, b.short, b.what),
			first: "agentdlq triage --pipeline " + def.Name + " (which tenant, which reason: the report's By tenant and Attention)"}
		alarm := awscloudwatch.NewAlarm(p.Construct, jsii.String("Alarm-"+b.anchor), &awscloudwatch.AlarmProps{
			Metric:             expr,
			Threshold:          jsii.Number(b.threshold),
			ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
			EvaluationPeriods:  jsii.Number(1),
			DatapointsToAlarm:  jsii.Number(1),
			TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
			AlarmDescription:   jsii.String(alarmDescription(def.Name, s, runbook)),
		})
		alarm.Node().AddDependency(p.SLO) // the metric exists once the SLO does
		alarm.AddAlarmAction(action)
		alarm.AddOkAction(action)
		p.Alarms[b.anchor] = alarm
	}
}

// burnRate is the SLO's burn rate over a look-back window, which
// Application Signals publishes for each of its burn-rate configurations
// (AWS/ApplicationSignals BurnRate, by SloName and BurnRateWindowMinutes).
func (p *Pipeline) burnRate(window int) awscloudwatch.Metric {
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace:  jsii.String("AWS/ApplicationSignals"),
		MetricName: jsii.String("BurnRate"),
		DimensionsMap: &map[string]*string{
			"SloName":               jsii.String(p.SLOName),
			"BurnRateWindowMinutes": jsii.String(strconv.Itoa(window)),
		},
		Statistic: jsii.String("Average"),
		Period:    minutes(5),
	})
}
