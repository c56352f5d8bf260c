package stack

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// The "trigger" field of the event that the triage Lambda's EventBridge
// rules send it (an input transformer builds it; the alarm fields are set
// when an alarm started the run; triage.Event reads it):
//
//	{"trigger":"schedule","pipeline":"agent-tasks"}
//	{"trigger":"alarm","pipeline":"agent-tasks","alarm_name":"…","alarm_arn":"…","state":"ALARM","time":"…"}
const (
	TriggerSchedule = "schedule"
	TriggerAlarm    = "alarm"
)

// triageEnvLimit is Lambda's limit on the total size of a function's
// environment variables.
const triageEnvLimit = 4096

// TriageProps configures the stack's triage Lambda.
type TriageProps struct {
	// Pipelines is required: the pipelines the triage watches.
	Pipelines []*Pipeline
	// Ledger is required: read with GetItem only.
	Ledger awsdynamodb.ITable
	// Bucket is required: reports and eval exports go under <pipeline>/ (not
	// <pipeline>/audit/, which belongs to the redrive).
	Bucket awss3.IBucket
	// AlarmKey is required: the alarm topics' key (publishing needs it).
	AlarmKey awskms.IKey
	// LogKey is optional: a KMS key for the triage's log group.
	LogKey awskms.IKey
	// QueueKey is optional: the queues' KMS key when they do not use SSE-SQS.
	QueueKey awskms.IKey
	// AssetDir is required: the directory holding the triage's arm64
	// bootstrap, built from github.com/agentdlq/agentdlq/triage/lambda
	// (docs/deploying.md gives the go build command).
	AssetDir string
}

// Triage is the stack's read-only triage Lambda and its triggers.
type Triage struct {
	constructs.Construct
	// Function is the first (usually the only) triage function.
	Function awslambda.Function
	// Functions are all of them: pipelines are packed into as few functions
	// as Lambda's 4 KB environment allows (AGENTDLQ_TRIAGE_TARGETS holds each
	// pipeline's definition); FunctionOf maps a pipeline name to its function.
	Functions  []awslambda.Function
	FunctionOf map[string]awslambda.Function
	Role       awsiam.Role
	Policy     awsiam.Policy
	Logs       awslogs.LogGroup
	// Schedules and AlarmRules by pipeline name.
	Schedules  map[string]awsevents.Rule
	AlarmRules map[string]awsevents.Rule
}

type triageTarget struct {
	Pipeline      any    `json:"pipeline"`
	HotQueueURL   string `json:"hot_queue_url"`
	HotQueueARN   string `json:"hot_queue_arn"`
	DLQURL        string `json:"dlq_url"`
	DLQARN        string `json:"dlq_arn"`
	AlarmTopicARN string `json:"alarm_topic_arn"`
	// Senders are the worker's and the redrive role's unique ids: triage
	// trusts dlq_reason/dlq_meta only on letters they sent (triage.Senders).
	Senders []string `json:"senders,omitempty"`
}

func (props *TriageProps) validate() error {
	var errs []error
	if props == nil || len(props.Pipelines) == 0 {
		return propsErr("TriageProps.Pipelines", "", "is required: at least one Pipeline (NewPipeline's)")
	}
	for _, f := range []struct {
		name, shared string
		missing      bool
	}{{"Ledger", "Ledger", props.Ledger == nil}, {"Bucket", "EvalBucket", props.Bucket == nil}, {"AlarmKey", "AlarmKey", props.AlarmKey == nil}} {
		if f.missing {
			errs = append(errs, propsErr("TriageProps."+f.name, "", "is required (Shared.%s)", f.shared))
		}
	}
	if err := checkAssetDir("TriageProps.AssetDir", props.AssetDir, triagePackage); err != nil {
		errs = append(errs, err)
	}
	defs := make([]any, 0, len(props.Pipelines))
	for _, p := range props.Pipelines {
		defs = append(defs, p.Def)
	}
	if _, err := triageChunks(defs); err != nil {
		errs = append(errs, fmt.Errorf("triage construct: %w", err))
	}
	return errors.Join(errs...)
}

// targetSize estimates the bytes one target adds to AGENTDLQ_TRIAGE_TARGETS,
// with its tokens counted at the length of long real URLs and ARNs.
func targetSize(def any) int {
	const url = "https://sqs.ap-southeast-2.amazonaws.com/123456789012/AgentDLQ-agent-tasks-DLQ0123456789AB-AbCdEfGhIjKl.fifo"
	const arn = "arn:aws:sqs:ap-southeast-2:123456789012:AgentDLQ-agent-tasks-DLQ0123456789AB-AbCdEfGhIjKl.fifo"
	const roleID = "AROA0123456789ABCDEFG"
	b, _ := json.Marshal(triageTarget{Pipeline: def, HotQueueURL: url, HotQueueARN: arn, DLQURL: url, DLQARN: arn, AlarmTopicARN: arn, Senders: []string{roleID, roleID}})
	return len(b) + 1 // and a comma
}

// triageChunks packs pipelines, in order, into groups whose environment fits
// Lambda's limit (AGENTDLQ_TRIAGE_TARGETS plus the bucket and table names).
func triageChunks(defs []any) ([][]int, error) {
	const fixed = len("AGENTDLQ_TRIAGE_TARGETS") + 2 + len("AGENTDLQ_EVAL_BUCKET") + 63 + len("AGENTDLQ_LEDGER_TABLE") + 255
	var chunks [][]int
	size := fixed
	for i, def := range defs {
		n := targetSize(def)
		if fixed+n > triageEnvLimit {
			return nil, fmt.Errorf("the definition of pipeline #%d needs about %d bytes of environment, above Lambda's %d-byte limit: shorten its description, drop_fields or hash_fields",
				i+1, fixed+n, triageEnvLimit)
		}
		if len(chunks) == 0 || size+n > triageEnvLimit {
			chunks = append(chunks, nil)
			size = fixed
		}
		chunks[len(chunks)-1] = append(chunks[len(chunks)-1], i)
		size += n
	}
	return chunks, nil
}

// NewTriage creates the triage Lambda with its read-only role, a schedule
// per pipeline and a rule that starts it on every DLQ alarm of a pipeline.
func NewTriage(scope constructs.Construct, id string, props *TriageProps) (t *Triage, err error) {
	if err := props.validate(); err != nil {
		return nil, err
	}
	if err := checkScope(scope, id, true); err != nil {
		return nil, err
	}
	defer func() {
		if recoverInto(&err, "triage construct", recover()) {
			t = nil
		}
	}()
	t = &Triage{Construct: constructs.NewConstruct(scope, jsii.String(id)), Schedules: map[string]awsevents.Rule{}, AlarmRules: map[string]awsevents.Rule{},
		FunctionOf: map[string]awslambda.Function{}}

	in, err := collectTriageInputs(props)
	if err != nil {
		return nil, err
	}
	chunks, err := triageChunks(in.defs)
	if err != nil {
		return nil, fmt.Errorf("triage construct: %w", err)
	}

	t.Logs = awslogs.NewLogGroup(t.Construct, jsii.String("Logs"), &awslogs.LogGroupProps{
		LogGroupName:  jsii.String(LogGroupPrefix(t.Construct) + "triage"),
		Retention:     awslogs.RetentionDays_ONE_YEAR,
		EncryptionKey: props.LogKey,
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
	})
	t.Role = awsiam.NewRole(t.Construct, jsii.String("Role"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String("agentdlq triage: read-only on the DLQs; never deletes, sends, purges or moves a message"),
	})
	t.newPolicy(props, in)
	t.newFunctions(props, in, chunks)
	t.Function = t.Functions[0]
	t.newRules(props)
	return t, nil
}

// triageInputs is what the triage's parts are made of, gathered from every
// pipeline: the targets and definitions (as JSON values), the ARNs its policy
// names and the longest run.
type triageInputs struct {
	targets, defs                                       []any
	dlqARNs, topicARNs, objectARNs, auditARNs, prefixes []string
	maxSeconds                                          int
}

// collectTriageInputs gathers the triage's inputs from every pipeline.
func collectTriageInputs(props *TriageProps) (triageInputs, error) {
	in := triageInputs{targets: make([]any, 0, len(props.Pipelines)), defs: make([]any, 0, len(props.Pipelines))}
	for _, p := range props.Pipelines {
		var def any
		b, err := json.Marshal(p.Def)
		if err == nil {
			err = json.Unmarshal(b, &def)
		}
		if err != nil {
			return in, fmt.Errorf("triage construct: encode pipeline %q: %w", p.Def.Name, err)
		}
		// Round-trip through encoding/json so that the JSON keys are the tags.
		var target any
		b, err = json.Marshal(triageTarget{
			Pipeline:    def,
			HotQueueURL: *p.HotQueue.QueueUrl(), HotQueueARN: *p.HotQueue.QueueArn(),
			DLQURL: *p.DLQ.QueueUrl(), DLQARN: *p.DLQ.QueueArn(),
			AlarmTopicARN: *p.AlarmTopic.TopicArn(),
			Senders:       []string{*p.WorkerRole.RoleId(), *p.RedriveRole.RoleId()},
		})
		if err == nil {
			err = json.Unmarshal(b, &target)
		}
		if err != nil {
			return in, fmt.Errorf("triage construct: encode target %q: %w", p.Def.Name, err)
		}
		in.targets = append(in.targets, target)
		in.defs = append(in.defs, def)
		in.dlqARNs = append(in.dlqARNs, *p.DLQ.QueueArn())
		in.topicARNs = append(in.topicARNs, *p.AlarmTopic.TopicArn())
		// What triage writes and reads back: its reports (<pipeline>/reports/)
		// and its eval exports (<pipeline>/<yyyy-mm-dd>/). Never the
		// worker's claim checks (evidence/), the redrive's repairs (the
		// unredacted originals) or its audit records.
		in.objectARNs = append(in.objectARNs, *props.Bucket.ArnForObjects(jsii.String(p.Def.Name + "/reports/*")),
			*props.Bucket.ArnForObjects(jsii.String(p.Def.Name + "/????-??-??/*")))
		for _, theirs := range []string{"audit", "evidence", "repairs"} {
			in.auditARNs = append(in.auditARNs, *props.Bucket.ArnForObjects(jsii.String(p.Def.Name + "/" + theirs + "/*")))
		}
		in.prefixes = append(in.prefixes, p.Def.Name+"/*")
		in.maxSeconds = max(in.maxSeconds, p.Def.Triage.MaxSeconds)
	}
	return in, nil
}

// newPolicy creates the triage role's policy: read-only on the DLQs, its
// own objects in the bucket, the alarm topics, the ledger and its logs.
func (t *Triage) newPolicy(props *TriageProps, in triageInputs) {
	statements := []awsiam.PolicyStatement{
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("ReadOnlyScanOfTheDLQs"),
			Actions:   jsii.Strings("sqs:ReceiveMessage", "sqs:ChangeMessageVisibility", "sqs:GetQueueAttributes"),
			Resources: jsii.Strings(in.dlqARNs...),
		}),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("ReportsAndEvalExports"),
			Actions:   jsii.Strings("s3:PutObject", "s3:GetObject"),
			Resources: jsii.Strings(in.objectARNs...),
		}),
		// <pipeline>/audit/ holds the redrive's audit records, evidence/ the
		// worker's claim checks (which a redrive trusts), repairs/ the
		// unredacted originals of repaired tasks: never the triage's to
		// write or read (denied as well as not allowed, should a broader
		// grant ever be added).
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("NotTheRedriveOrWorkerObjects"),
			Effect:    awsiam.Effect_DENY,
			Actions:   jsii.Strings("s3:PutObject", "s3:GetObject"),
			Resources: jsii.Strings(in.auditARNs...),
		}),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:        jsii.String("ListItsPrefixes"),
			Actions:    jsii.Strings("s3:ListBucket"),
			Resources:  jsii.Strings(*props.Bucket.BucketArn()),
			Conditions: &map[string]any{"StringLike": map[string]any{"s3:prefix": in.prefixes}},
		}),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("SummaryToTheAlarmTopics"),
			Actions:   jsii.Strings("sns:Publish"),
			Resources: jsii.Strings(in.topicARNs...),
		}),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("EncryptedAlarmTopics"),
			Actions:   jsii.Strings("kms:Decrypt", "kms:GenerateDataKey"),
			Resources: jsii.Strings(*props.AlarmKey.KeyArn()),
		}),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("ReadTheLedger"),
			Actions:   jsii.Strings("dynamodb:GetItem"),
			Resources: jsii.Strings(*props.Ledger.TableArn()),
		}),
		// The worker's Processed metric over the SLO period, so that each
		// report states the error budget spent. GetMetricData supports no
		// resource-level permission and no condition key of its own: "*",
		// held to the stack's region (aws:RequestedRegion). It reads
		// metrics only; it cannot write, alarm or delete.
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:        jsii.String("ReadTheProcessedMetric"),
			Actions:    jsii.Strings("cloudwatch:GetMetricData"),
			Resources:  jsii.Strings("*"),
			Conditions: &map[string]any{"StringEquals": map[string]any{"aws:RequestedRegion": *awscdk.Stack_Of(t.Construct).Region()}},
		}),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("WriteItsLogs"),
			Actions:   jsii.Strings("logs:CreateLogStream", "logs:PutLogEvents"),
			Resources: jsii.Strings(*t.Logs.LogGroupArn()),
		}),
	}
	if props.QueueKey != nil {
		statements = append(statements, awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("QueueKey"),
			Actions:   jsii.Strings("kms:Decrypt"),
			Resources: jsii.Strings(*props.QueueKey.KeyArn()),
		}))
	}
	if key := props.Bucket.EncryptionKey(); key != nil {
		statements = append(statements, awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("EvalBucketEncryption"),
			Actions:   jsii.Strings("kms:Decrypt", "kms:GenerateDataKey"),
			Resources: jsii.Strings(*key.KeyArn()),
		}))
	}
	t.Policy = awsiam.NewPolicy(t.Construct, jsii.String("Policy"), &awsiam.PolicyProps{Roles: &[]awsiam.IRole{t.Role}, Statements: &statements})
	suppress(t.Policy, "AwsSolutions-IAM5",
		"reports and eval exports are objects named at run time (time, report hash, export id) under each pipeline's <pipeline>/reports/ and <pipeline>/<yyyy-mm-dd>/ prefixes; <pipeline>/audit/*, evidence/* and repairs/* are denied",
		`/^Resource::<.*\.Arn>\/[a-z0-9-]+\/(reports|\?\?\?\?-\?\?-\?\?|audit|evidence|repairs)\/\*$/`)
	suppress(t.Policy, "AwsSolutions-IAM5",
		"cloudwatch:GetMetricData supports no resource-level permission (nor a condition key of its own): the triage reads the worker's AgentDLQ Processed metric with it, to state each report's SLO budget spent; the statement allows that one read-only action, in the stack's region only (aws:RequestedRegion)",
		"Resource::*")

}

// newFunctions creates a Lambda per chunk of pipelines (a chunk's targets
// fit in its environment).
func (t *Triage) newFunctions(props *TriageProps, in triageInputs, chunks [][]int) {
	stack := awscdk.Stack_Of(t.Construct)
	for i, chunk := range chunks {
		chunkTargets := make([]any, 0, len(chunk))
		for _, j := range chunk {
			chunkTargets = append(chunkTargets, in.targets[j])
		}
		fid := "Function"
		if i > 0 {
			fid = fmt.Sprintf("Function%d", i+1)
		}
		fn := awslambda.NewFunction(t.Construct, jsii.String(fid), &awslambda.FunctionProps{
			Description:  jsii.String("agentdlq triage: read-only scan of every DLQ, report, metrics, eval export"),
			Runtime:      awslambda.Runtime_PROVIDED_AL2023(),
			Architecture: awslambda.Architecture_ARM_64(),
			Handler:      jsii.String("bootstrap"),
			Code:         awslambda.Code_FromAsset(jsii.String(props.AssetDir), nil),
			Timeout:      awscdk.Duration_Seconds(jsii.Number(float64(min(in.maxSeconds+30, 900)))),
			MemorySize:   jsii.Number(512),
			Role:         t.Role,
			LogGroup:     t.Logs,
			Environment: &map[string]*string{
				"AGENTDLQ_TRIAGE_TARGETS": stack.ToJsonString(chunkTargets, nil),
				"AGENTDLQ_EVAL_BUCKET":    props.Bucket.BucketName(),
				"AGENTDLQ_LEDGER_TABLE":   props.Ledger.TableName(),
			},
		})
		fn.Node().AddDependency(t.Policy)
		t.Functions = append(t.Functions, fn)
		for _, j := range chunk {
			t.FunctionOf[props.Pipelines[j].Def.Name] = fn
		}
	}
}

// newRules creates each pipeline's schedule and the rule that starts its
// triage when one of its DLQ alarms goes to ALARM.
func (t *Triage) newRules(props *TriageProps) {
	for _, p := range props.Pipelines {
		name := p.Def.Name
		idName := regexp.MustCompile(`[^A-Za-z0-9]`).ReplaceAllString(name, "")
		t.Schedules[name] = awsevents.NewRule(t.Construct, jsii.String("Schedule-"+idName), &awsevents.RuleProps{
			Description: jsii.String(fmt.Sprintf("agentdlq triage of %s every %d minutes", name, p.Def.Triage.ScheduleMinutes)),
			Schedule:    awsevents.Schedule_Rate(minutes(p.Def.Triage.ScheduleMinutes)),
			Targets: &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(t.FunctionOf[name], &awseventstargets.LambdaFunctionProps{
				Event:         awsevents.RuleTargetInput_FromObject(map[string]any{"trigger": TriggerSchedule, "pipeline": name}),
				RetryAttempts: jsii.Number(2),
				MaxEventAge:   awscdk.Duration_Hours(jsii.Number(1)),
			})},
		})
		alarmARNs := make([]*string, 0, len(p.DLQAlarms))
		for _, a := range p.DLQAlarms {
			alarmARNs = append(alarmARNs, a.AlarmArn())
		}
		t.AlarmRules[name] = awsevents.NewRule(t.Construct, jsii.String("OnAlarm-"+idName), &awsevents.RuleProps{
			Description: jsii.String("agentdlq triage of " + name + " when one of its DLQ alarms goes to ALARM"),
			EventPattern: &awsevents.EventPattern{
				Source:     jsii.Strings("aws.cloudwatch"),
				DetailType: jsii.Strings("CloudWatch Alarm State Change"),
				Resources:  &alarmARNs,
				Detail:     &map[string]any{"state": map[string]any{"value": []string{"ALARM"}}},
			},
			Targets: &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(t.FunctionOf[name], &awseventstargets.LambdaFunctionProps{
				Event: awsevents.RuleTargetInput_FromObject(map[string]any{
					"trigger":    TriggerAlarm,
					"pipeline":   name,
					"alarm_name": awsevents.EventField_FromPath(jsii.String("$.detail.alarmName")),
					"alarm_arn":  awsevents.EventField_FromPath(jsii.String("$.resources[0]")),
					"state":      awsevents.EventField_FromPath(jsii.String("$.detail.state.value")),
					"time":       awsevents.EventField_Time(),
				}),
				RetryAttempts: jsii.Number(2),
				MaxEventAge:   awscdk.Duration_Hours(jsii.Number(1)),
			})},
		})
	}
}
