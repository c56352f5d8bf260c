package stack

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapplicationsignals"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/agentdlq/agentdlq/breaker/dynamostore"
	"github.com/agentdlq/agentdlq/internal/lambdaenv"
	"github.com/agentdlq/agentdlq/pipeline"
)

// PauseAction is what the redrive role may do to the worker's event source
// mapping, and to no other: disable it (pause, the kill switch) and enable it
// (resume). redrive.Pause finds the mapping with ListEventSourceMappings by
// the hot queue's ARN, which has no resource-level permission.
const PauseAction = "lambda:UpdateEventSourceMapping"

// MoveTaskActions are the SQS calls of message move tasks. The DLQ policy
// denies them, with DeleteMessage and PurgeQueue, to every principal but the
// pipeline's redrive role.
var MoveTaskActions = []string{"sqs:StartMessageMoveTask", "sqs:ListMessageMoveTasks", "sqs:CancelMessageMoveTask"}

// dlqOwnerOnlyActions are denied on a DLQ to everyone but the redrive role: a
// dead letter leaves the DLQ only through the owner's redrive (or retention).
var dlqOwnerOnlyActions = append(append([]string(nil), MoveTaskActions...), "sqs:DeleteMessage", "sqs:PurgeQueue")

// DLQDeployerOnlyActions are denied on a DLQ to everyone but the principal
// that deploys the stack: they could rewrite the queue's policy, shorten its
// retention, open it to another account or delete it with its evidence, or
// retag it: the redrive gate reads the DLQ's agentdlq:owner and
// agentdlq:redrive-role tags, so whoever may tag the DLQ may name the role
// the gate admits.
var DLQDeployerOnlyActions = []string{"sqs:SetQueueAttributes", "sqs:DeleteQueue", "sqs:AddPermission", "sqs:RemovePermission", "sqs:TagQueue", "sqs:UntagQueue"}

// RedriveLedgerAttributes are the ledger attributes the redrive role may
// write (UpdateItem, restricted with dynamodb:Attributes): the key and what
// ledger.Dynamo's Redriven sets. The role reads whole items with GetItem.
var RedriveLedgerAttributes = []string{LedgerPartitionKey, "redrive_count", "updated_at", LedgerTTLAttribute}

// BreakerLedgerAttributes are the attributes of a breaker item in the
// ledger table (dynamostore): the redrive role's `agentdlq breaker
// open|close` writes them, and only on items whose pk starts with
// "breaker:" (dynamodb:LeadingKeys), never a ledger entry.
var BreakerLedgerAttributes = dynamostore.Attributes

// ReconcileLedgerAttributes are the ledger attributes the redrive role's
// reconcile (`agentdlq ledger reconcile`, ledger.Ledger.Reconcile) may
// access, in a statement of its own: what it writes (state and receipt of
// a confirmed effect, effect_started removed for no effect, the
// reconciled outcome, who and when, the update times) and what its
// condition reads (lease_until). It cannot touch the dead-letter or
// redrive counts, the owner or the last reason.
var ReconcileLedgerAttributes = []string{LedgerPartitionKey, "state", "receipt", "effect_started", "lease_until",
	"reconciled", "reconciled_by", "reconciled_at", "updated_at", LedgerTTLAttribute}

// PipelineProps configures one pipeline: a hot queue, its DLQ, its worker, its
// redrive role, its alarms and its dashboard.
type PipelineProps struct {
	// Pipeline is required: the pipeline's entry of the definition file. It is
	// copied, defaults are applied and it is validated with pipeline.Validate
	// (maxReceiveCount 3–5, DLQ retention longer than the source's, an owner…).
	Pipeline *pipeline.Pipeline
	// Ledger is required: the idempotency ledger table (Shared.Ledger).
	Ledger awsdynamodb.ITable
	// Bucket is required: the eval bucket, where the redrive role writes its
	// audit records under <pipeline>/audit/.
	Bucket awss3.IBucket
	// AlarmKey is required: the KMS key of the alarm topic (Shared.AlarmKey);
	// its key policy must let CloudWatch use it (Shared does).
	AlarmKey awskms.IKey
	// WorkerAssetDir is required: a directory holding the worker's arm64
	// `bootstrap` for provided.al2023 (docs/deploying.md gives the go build
	// command). Tests pass a temporary directory with a placeholder.
	WorkerAssetDir string
	// WorkerVersion is optional (default "dev"): AGENTDLQ_WORKER_VERSION,
	// stamped in dlq_meta.
	WorkerVersion string
	// LogKey is optional: a KMS key for the worker's log group (its key
	// policy must let CloudWatch Logs use it, as Shared.DataKey's does). Nil
	// leaves the log group with CloudWatch Logs' own encryption.
	LogKey awskms.IKey
	// QueueKey is optional: a KMS key for the hot queue and the DLQ. Nil
	// means SQS-managed server-side encryption (SSE-SQS).
	QueueKey awskms.IKey
	// RedrivePrincipalARN is required: the IAM role or user ARN (or a token
	// of one, such as a role of the caller's own app) that alone may assume
	// the redrive role.
	RedrivePrincipalARN string
	// DeployRoleARN is optional: the IAM role or user ARN that deploys the
	// stack, the one principal allowed SetQueueAttributes, DeleteQueue,
	// AddPermission and RemovePermission on the DLQ. Default: the CDK
	// bootstrap's CloudFormation execution role of the stack's
	// DefaultStackSynthesizer; with any other synthesizer it is required.
	DeployRoleARN string
	// RunbookURL is optional (default "RUNBOOK.md"): the runbook that every
	// alarm description links, with an anchor per alarm (#dlq-depth, …).
	RunbookURL string
}

// Pipeline is one deployed pipeline.
type Pipeline struct {
	constructs.Construct
	// Def is the validated pipeline definition, defaults applied.
	Def          pipeline.Pipeline
	HotQueue     awssqs.Queue
	DLQ          awssqs.Queue
	Worker       awslambda.Function
	WorkerRole   awsiam.Role
	WorkerPolicy awsiam.Policy
	WorkerLogs   awslogs.LogGroup
	EventSource  awslambda.EventSourceMapping
	RedriveRole  awsiam.Role
	AlarmTopic   awssns.Topic
	// Alarms by runbook anchor (AlarmDLQDepth, …).
	Alarms map[string]awscloudwatch.Alarm
	// DLQAlarms are the alarms that start the triage Lambda.
	DLQAlarms []awscloudwatch.Alarm
	Dashboard awscloudwatch.Dashboard
	// SLO is the dead-letter service level objective (newSLO), SLOName its
	// name.
	SLO     awsapplicationsignals.CfnServiceLevelObjective
	SLOName string
}

// validate applies the defaults to a copy of the definition and reports every
// problem of the props at once.
func (props *PipelineProps) validate() (pipeline.Pipeline, error) {
	if props == nil || props.Pipeline == nil {
		return pipeline.Pipeline{}, propsErr("PipelineProps.Pipeline", "", "is required: the pipeline's definition (an entry of pipeline.Load's file, or a pipeline.Pipeline)")
	}
	def := *props.Pipeline
	def.ApplyDefaults()
	var errs []error
	if err := def.Validate(); err != nil {
		errs = append(errs, err)
	}
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("pipeline %q: "+format, append([]any{def.Name}, args...)...))
	}
	field := func(name, format string, args ...any) {
		errs = append(errs, propsErr("PipelineProps."+name, def.Name, format, args...))
	}
	if props.Ledger == nil {
		field("Ledger", "is required (the idempotency ledger table, Shared.Ledger)")
	}
	if props.Bucket == nil {
		field("Bucket", "is required (the eval bucket that holds the redrive audit records, Shared.EvalBucket)")
	}
	if props.AlarmKey == nil {
		field("AlarmKey", "is required (the KMS key of the alarm topic, Shared.AlarmKey)")
	}
	if err := checkAssetDir("PipelineProps.WorkerAssetDir", props.WorkerAssetDir, workerPackage); err != nil {
		err.Pipeline = def.Name
		errs = append(errs, err)
	}
	if def.Triage.ScheduleMinutes > 1440 {
		bad("triage.schedule_minutes %d exceeds one day (the expiry-risk alarm's period follows it)", def.Triage.ScheduleMinutes)
	}
	if def.Triage.MaxSeconds > 870 {
		bad("triage.max_seconds %d leaves no margin under Lambda's 900 s timeout", def.Triage.MaxSeconds)
	}
	switch {
	case props.RedrivePrincipalARN == "":
		field("RedrivePrincipalARN", "is required: the IAM role or user that alone may assume the redrive role")
	case !checkPrincipal(props.RedrivePrincipalARN):
		field("RedrivePrincipalARN", "%q is not an IAM role or user ARN", props.RedrivePrincipalARN)
	}
	if props.DeployRoleARN != "" && !checkPrincipal(props.DeployRoleARN) {
		field("DeployRoleARN", "%q is not an IAM role or user ARN", props.DeployRoleARN)
	}
	return def, errors.Join(errs...)
}

// deployPrincipal is the ARN of who deploys scope's stack: DeployRoleARN,
// or the bootstrap's CloudFormation execution role of a
// DefaultStackSynthesizer (its ${AWS::…} placeholders resolved by Fn::Sub).
func deployPrincipal(scope constructs.Construct, arn string) (string, error) {
	if arn != "" {
		return arn, nil
	}
	if d, ok := awscdk.Stack_Of(scope).Synthesizer().(awscdk.DefaultStackSynthesizer); ok {
		return *awscdk.Fn_Sub(d.CloudFormationExecutionRoleArn(), nil), nil
	}
	return "", &PropsError{Field: "PipelineProps.DeployRoleARN", Err: errors.New("is required with a synthesizer other than DefaultStackSynthesizer, which has no CloudFormation execution role: set Props.DeployRoleARN (or PipelineProps.DeployRoleARN) to the IAM role or user that deploys the stack")}
}

// NewPipeline validates props and creates the pipeline's resources under
// scope (in any stack). It returns an error, and creates nothing, when props
// are invalid, the scope is in no stack or id is taken.
func NewPipeline(scope constructs.Construct, id string, props *PipelineProps) (p *Pipeline, err error) {
	def, err := props.validate()
	if err != nil {
		return nil, err
	}
	if err := checkScope(scope, id, true); err != nil {
		return nil, err
	}
	defer func() {
		if recoverInto(&err, fmt.Sprintf("pipeline %q", def.Name), recover()) {
			p = nil
		}
	}()
	deployer, err := deployPrincipal(scope, props.DeployRoleARN)
	if err != nil {
		return nil, fmt.Errorf("pipeline %q: %w", def.Name, err)
	}
	// Defaults, applied to a copy: the caller's props are left as they are.
	pp := *props
	props = &pp
	if props.WorkerVersion == "" {
		props.WorkerVersion = "dev"
	}
	if props.RunbookURL == "" {
		props.RunbookURL = "RUNBOOK.md"
	}
	defJSON, err := json.Marshal(def)
	if err != nil {
		return nil, fmt.Errorf("pipeline %q: encode definition: %w", def.Name, err)
	}

	p = &Pipeline{Construct: constructs.NewConstruct(scope, jsii.String(id)), Def: def, Alarms: map[string]awscloudwatch.Alarm{}}
	tags := awscdk.Tags_Of(p.Construct)
	tags.Add(jsii.String(pipeline.TagPipeline), jsii.String(def.Name), nil)
	// Not on the roles: a principal tag must never stand for the owner.
	tags.Add(jsii.String(pipeline.TagOwner), jsii.String(def.Owner), &awscdk.TagProps{
		ExcludeResourceTypes: jsii.Strings("AWS::IAM::Role", "AWS::IAM::User"),
	})

	// The redrive role first: the DLQ's policy names it.
	p.RedriveRole = newRedriveRole(p, def, props.RedrivePrincipalARN)

	p.newQueues(def, props, deployer)

	p.newWorker(def, string(defJSON), props)
	// Dead-letter evidence is the worker's word: no other principal may put
	// a letter on the DLQ (the broker's own moves are no SendMessage call),
	// and the DLQ names who may, for triage to check each letter's SenderId
	// (triage.Senders).
	p.DLQ.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("OnlyTheWorkerSendsDeadLetters"),
		Effect:     awsiam.Effect_DENY,
		Principals: &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()},
		Actions:    jsii.Strings("sqs:SendMessage"),
		Resources:  jsii.Strings(*p.DLQ.QueueArn()),
		Conditions: &map[string]any{
			"ArnNotEquals": map[string]any{"aws:PrincipalArn": []any{p.WorkerRole.RoleArn(), p.RedriveRole.RoleArn()}},
		},
	}))
	awscdk.Tags_Of(p.DLQ).Add(jsii.String(pipeline.TagSenders), jsii.String(*p.WorkerRole.RoleId()+" "+*p.RedriveRole.RoleId()), nil)
	p.grantRedrive(def, props)

	p.newAlarmTopic(def, props)
	p.newAlarms(def, props.RunbookURL, *props.Bucket.BucketName())
	p.newSLO(def, props.RunbookURL)
	p.newDashboard(def, props.RunbookURL)
	p.outputs(def)
	return p, nil
}

// newQueues creates the DLQ, with the policy that keeps its dead letters
// the redrive role's and the queue the deployer's, and the hot queue that
// dead-letters into it.
func (p *Pipeline) newQueues(def pipeline.Pipeline, props *PipelineProps, deployer string) {
	stack := awscdk.Stack_Of(p.Construct)
	// The hot queue's name is generated from the construct path (never
	// hard-coded), so that the DLQ's RedriveAllowPolicy can name its source
	// by ARN without a reference cycle (the hot queue's RedrivePolicy names
	// the DLQ).
	hotName := *awscdk.Names_UniqueResourceName(p.Construct, &awscdk.UniqueResourceNameOptions{MaxLength: jsii.Number(70), Separator: jsii.String("-")}) + "-hot"
	if def.FIFO {
		hotName += ".fifo"
	}
	hotARN := stack.FormatArn(&awscdk.ArnComponents{
		Service: jsii.String("sqs"), Resource: jsii.String(hotName), ArnFormat: awscdk.ArnFormat_NO_RESOURCE_NAME,
	})
	encryption := awssqs.QueueEncryption_SQS_MANAGED
	if props.QueueKey != nil {
		encryption = awssqs.QueueEncryption_KMS
	}

	// The DLQ takes the dead-letter reserve more than the hot queue: the dead
	// letter of any message the hot queue took fits with its dlq_reason and
	// dlq_meta, and the worker is told the DLQ's size.
	p.DLQ = awssqs.NewQueue(p.Construct, jsii.String("DLQ"), &awssqs.QueueProps{
		Fifo:                jsii.Bool(def.FIFO),
		MaxMessageSizeBytes: jsii.Number(float64(def.DLQMaxMessageBytes())),
		RetentionPeriod:     awscdk.Duration_Hours(jsii.Number(float64(def.DLQRetentionHours))),
		Encryption:          encryption,
		EncryptionMasterKey: props.QueueKey,
		EnforceSSL:          jsii.Bool(true),
		RedriveAllowPolicy: &awssqs.RedriveAllowPolicy{
			RedrivePermission: awssqs.RedrivePermission_BY_QUEUE,
			SourceQueues:      &[]awssqs.IQueue{awssqs.Queue_FromQueueArn(p.Construct, jsii.String("HotQueueRef"), hotARN)},
		},
	})
	awscdk.Tags_Of(p.DLQ).Add(jsii.String(pipeline.TagRole), jsii.String("dlq"), nil)
	// `agentdlq redrive` checks in AWS that its caller is this role.
	awscdk.Tags_Of(p.DLQ).Add(jsii.String(pipeline.TagRedriveRole), p.RedriveRole.RoleArn(), nil)
	p.DLQ.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("OnlyTheRedriveRoleMovesOrDeletesDeadLetters"),
		Effect:     awsiam.Effect_DENY,
		Principals: &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()},
		Actions:    jsii.Strings(dlqOwnerOnlyActions...),
		Resources:  jsii.Strings(*p.DLQ.QueueArn()),
		// A move task's own receives and deletes run as forward access
		// sessions of the caller (aws:ViaAWSService): StartMessageMoveTask
		// itself is the redrive role's alone.
		Conditions: &map[string]any{
			"ArnNotEquals": map[string]any{"aws:PrincipalArn": p.RedriveRole.RoleArn()},
			"BoolIfExists": map[string]any{"aws:ViaAWSService": "false"},
		},
	}))
	// The queue itself (its policy, retention, permissions, existence) is
	// the deploying principal's alone: CloudFormation, through the CDK
	// bootstrap's execution role, or DeployRoleARN.
	p.DLQ.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("OnlyTheDeployerChangesOrDeletesTheDLQ"),
		Effect:     awsiam.Effect_DENY,
		Principals: &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()},
		Actions:    jsii.Strings(DLQDeployerOnlyActions...),
		Resources:  jsii.Strings(*p.DLQ.QueueArn()),
		Conditions: &map[string]any{"ArnNotEquals": map[string]any{"aws:PrincipalArn": deployer}},
	}))

	p.HotQueue = awssqs.NewQueue(p.Construct, jsii.String("HotQueue"), &awssqs.QueueProps{
		QueueName:           jsii.String(hotName),
		Fifo:                jsii.Bool(def.FIFO),
		MaxMessageSizeBytes: jsii.Number(float64(def.MaxMessageBytes)),
		RetentionPeriod:     awscdk.Duration_Hours(jsii.Number(float64(def.RetentionHours))),
		VisibilityTimeout:   awscdk.Duration_Seconds(jsii.Number(float64(def.VisibilityTimeoutSeconds))),
		Encryption:          encryption,
		EncryptionMasterKey: props.QueueKey,
		EnforceSSL:          jsii.Bool(true),
		DeadLetterQueue:     &awssqs.DeadLetterQueue{Queue: p.DLQ, MaxReceiveCount: jsii.Number(float64(def.MaxReceiveCount))},
	})
	awscdk.Tags_Of(p.HotQueue).Add(jsii.String(pipeline.TagRole), jsii.String("hot"), nil)
}

// newAlarmTopic creates the topic the pipeline's alarms publish to, which
// only this account's CloudWatch alarms may publish to.
func (p *Pipeline) newAlarmTopic(def pipeline.Pipeline, props *PipelineProps) {
	stack := awscdk.Stack_Of(p.Construct)
	p.AlarmTopic = awssns.NewTopic(p.Construct, jsii.String("AlarmTopic"), &awssns.TopicProps{
		DisplayName: jsii.String("agentdlq " + def.Name + " alarms"),
		MasterKey:   props.AlarmKey,
		EnforceSSL:  jsii.Bool(true),
	})
	// The topic policy that EnforceSSL writes replaces SNS's default one:
	// allow this account's CloudWatch alarms to publish, and nothing else.
	p.AlarmTopic.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("CloudWatchAlarmsOfThisAccountPublish"),
		Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String("cloudwatch.amazonaws.com"), nil)},
		Actions:    jsii.Strings("sns:Publish"),
		Resources:  jsii.Strings(*p.AlarmTopic.TopicArn()),
		Conditions: &map[string]any{
			"StringEquals": map[string]any{"aws:SourceAccount": stack.Account()},
			"ArnLike": map[string]any{"aws:SourceArn": stack.FormatArn(&awscdk.ArnComponents{
				Service: jsii.String("cloudwatch"), Resource: jsii.String("alarm"), ResourceName: jsii.String("*"), ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME,
			})},
		},
	}))
}

// GoMemLimit is the worker's GOMEMLIMIT for a function of memoryMB: 90% of
// it in MiB, so that the Go runtime collects garbage harder before Lambda
// stops the function for running out of memory, leaving the rest to the
// runtime's own stacks and the Lambda runtime interface.
func GoMemLimit(memoryMB int) string { return fmt.Sprintf("%dMiB", memoryMB*9/10) }

// GoMaxProcs is the worker's GOMAXPROCS for a function of memoryMB: the
// vCPUs its memory pays for, rounded up (lambdaenv.VCPUs: one below 1,769
// MB, where the two cores Lambda shows add up to less than one vCPU).
func GoMaxProcs(memoryMB int) string { return strconv.Itoa(lambdaenv.VCPUs(memoryMB)) }

// newWorker creates the worker Lambda, its log group, its least-privilege
// role and its SQS event source.
func (p *Pipeline) newWorker(def pipeline.Pipeline, defJSON string, props *PipelineProps) {
	p.WorkerLogs = awslogs.NewLogGroup(p.Construct, jsii.String("WorkerLogs"), &awslogs.LogGroupProps{
		LogGroupName:  jsii.String(LogGroupPrefix(p.Construct) + "worker/" + def.Name),
		Retention:     awslogs.RetentionDays_ONE_YEAR,
		EncryptionKey: props.LogKey,
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
	})
	p.WorkerRole = awsiam.NewRole(p.Construct, jsii.String("WorkerRole"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String("agentdlq worker of " + def.Name + ": consume the hot queue, dead-letter to its DLQ, write the ledger"),
	})
	statements := p.workerStatements(def, props)
	p.WorkerPolicy = awsiam.NewPolicy(p.Construct, jsii.String("WorkerPolicy"), &awsiam.PolicyProps{
		Roles:      &[]awsiam.IRole{p.WorkerRole},
		Statements: &statements,
	})
	suppress(p.WorkerPolicy, "AwsSolutions-IAM5",
		"claim checks are one object per oversized dead letter under the pipeline's own prefix <pipeline>/evidence/*, named by date and message id at run time",
		`/^Resource::<.*\.Arn>\/`+regexp.QuoteMeta(def.Name)+`\/evidence\/\*$/`)

	p.Worker = awslambda.NewFunction(p.Construct, jsii.String("Worker"), &awslambda.FunctionProps{
		Description:  jsii.String("agentdlq worker of pipeline " + def.Name),
		Runtime:      awslambda.Runtime_PROVIDED_AL2023(),
		Architecture: awslambda.Architecture_ARM_64(),
		Handler:      jsii.String("bootstrap"),
		Code:         awslambda.Code_FromAsset(jsii.String(props.WorkerAssetDir), nil),
		Timeout:      awscdk.Duration_Seconds(jsii.Number(float64(def.WorkerTimeoutSeconds))),
		MemorySize:   jsii.Number(float64(def.WorkerMemoryMB)),
		// At least the event source's concurrency (pipeline.Validate): the
		// drain never throttles itself, and no other function can take the
		// concurrency it needs.
		ReservedConcurrentExecutions: jsii.Number(float64(def.ReservedConcurrency)),
		Role:                         p.WorkerRole,
		LogGroup:                     p.WorkerLogs,
		Environment: &map[string]*string{
			"AGENTDLQ_PIPELINE_JSON":   jsii.String(defJSON),
			"AGENTDLQ_HOT_QUEUE_URL":   p.HotQueue.QueueUrl(),
			"AGENTDLQ_HOT_QUEUE_ARN":   p.HotQueue.QueueArn(),
			"AGENTDLQ_DLQ_URL":         p.DLQ.QueueUrl(),
			"AGENTDLQ_DLQ_ARN":         p.DLQ.QueueArn(),
			"AGENTDLQ_LEDGER_TABLE":    props.Ledger.TableName(),
			"AGENTDLQ_WORKER_VERSION":  jsii.String(props.WorkerVersion),
			"AGENTDLQ_EVIDENCE_BUCKET": props.Bucket.BucketName(),
			// The most a dead letter may be: the DLQ's MaximumMessageSize.
			pipeline.EnvDLQMaxMessageBytes: jsii.String(strconv.Itoa(def.DLQMaxMessageBytes())),
			// The Go runtime collects before the function's memory runs out.
			"GOMEMLIMIT": jsii.String(GoMemLimit(def.WorkerMemoryMB)),
			// As many Ps as the function has vCPUs, not the cores it sees.
			"GOMAXPROCS": jsii.String(GoMaxProcs(def.WorkerMemoryMB)),
		},
	})
	p.Worker.Node().AddDependency(p.WorkerPolicy)

	p.newEventSource(def)
}

// workerStatements are the worker role's: consume the hot queue, send to
// the DLQ (and requeue where the pipeline does), the ledger's items, its
// logs, the claim checks and the keys.
func (p *Pipeline) workerStatements(def pipeline.Pipeline, props *PipelineProps) []awsiam.PolicyStatement {
	statements := []awsiam.PolicyStatement{
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("ConsumeHotQueue"),
			Actions:   jsii.Strings("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility", "sqs:GetQueueAttributes"),
			Resources: jsii.Strings(*p.HotQueue.QueueArn()),
		}),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("DeadLetterToItsDLQ"),
			Actions:   jsii.Strings("sqs:SendMessage"),
			Resources: jsii.Strings(*p.DLQ.QueueArn()),
		}),
	}
	if def.RetryAfterRequeues > 0 {
		// Only where the pipeline requeues after a provider's Retry-After
		// (retry_after_requeues): the copy goes back to the hot queue.
		statements = append(statements, awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("RequeueRetryAfter"),
			Actions:   jsii.Strings("sqs:SendMessage"),
			Resources: jsii.Strings(*p.HotQueue.QueueArn()),
		}))
	}
	statements = append(statements, []awsiam.PolicyStatement{
		// ledger.Dynamo changes an entry only with conditional UpdateItem
		// calls: no PutItem or DeleteItem, which could erase the record
		// that prevents a second effect.
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("LedgerItems"),
			Actions:   jsii.Strings("dynamodb:GetItem", "dynamodb:UpdateItem"),
			Resources: jsii.Strings(*props.Ledger.TableArn()),
		}),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("WriteItsLogs"),
			Actions:   jsii.Strings("logs:CreateLogStream", "logs:PutLogEvents"),
			Resources: jsii.Strings(*p.WorkerLogs.LogGroupArn()),
		}),
	}...)
	// A dead letter too large for the DLQ keeps what it gave up as a claim
	// check under <pipeline>/evidence/ of the eval bucket (batch.S3API).
	statements = append(statements, awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("ClaimChecksOfOversizedDeadLetters"),
		Actions:   jsii.Strings("s3:PutObject"),
		Resources: jsii.Strings(*props.Bucket.ArnForObjects(jsii.String(def.Name + "/evidence/*"))),
	}))
	if key := props.Bucket.EncryptionKey(); key != nil {
		statements = append(statements, awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("ClaimCheckEncryption"),
			Actions:   jsii.Strings("kms:GenerateDataKey"),
			Resources: jsii.Strings(*key.KeyArn()),
		}))
	}
	if props.QueueKey != nil {
		statements = append(statements, awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("QueueKey"),
			Actions:   jsii.Strings("kms:Decrypt", "kms:GenerateDataKey"),
			Resources: jsii.Strings(*props.QueueKey.KeyArn()),
		}))
	}
	return statements
}

// newEventSource creates the worker's SQS event source on the hot queue.
func (p *Pipeline) newEventSource(def pipeline.Pipeline) {
	var window awscdk.Duration
	if def.BatchWindowSeconds > 0 {
		window = awscdk.Duration_Seconds(jsii.Number(float64(def.BatchWindowSeconds)))
	}
	// Either a maximum concurrency or provisioned mode: Lambda takes one of
	// them on an SQS event source (pipeline.Validate).
	var maxConcurrency *float64
	var pollers *awslambda.ProvisionedPollerConfig
	if pp := def.ProvisionedPollers; pp != nil {
		pollers = &awslambda.ProvisionedPollerConfig{
			MinimumPollers: jsii.Number(float64(pp.Minimum)),
			MaximumPollers: jsii.Number(float64(pp.Maximum)),
		}
	} else {
		maxConcurrency = jsii.Number(float64(def.MaxConcurrency))
	}
	p.EventSource = awslambda.NewEventSourceMapping(p.Construct, jsii.String("HotQueueSource"), &awslambda.EventSourceMappingProps{
		Target:                  p.Worker,
		EventSourceArn:          p.HotQueue.QueueArn(),
		BatchSize:               jsii.Number(float64(def.BatchSize)),
		MaxBatchingWindow:       window,
		MaxConcurrency:          maxConcurrency,
		ProvisionedPollerConfig: pollers,
		ReportBatchItemFailures: jsii.Bool(true),
		// The mapping's own counts (AWS/Lambda, by EventSourceMappingUUID):
		// polled, invoked, failed, dropped, deleted. The esm-dropped-events
		// and esm-failed-events alarms and the dashboard read them.
		MetricsConfig: &awslambda.MetricsConfig{Metrics: &[]awslambda.MetricType{awslambda.MetricType_EVENT_COUNT}},
	})
	// CloudFormation checks the role's SQS permissions when it creates the mapping.
	p.EventSource.Node().AddDependency(p.WorkerPolicy)
}

// newRedriveRole creates the role that alone may start, list and cancel move
// tasks on the DLQ and run the selective redrive. It trusts one named
// principal, never a tag: any principal that can set its own tags could
// carry one.
func newRedriveRole(p *Pipeline, def pipeline.Pipeline, principalARN string) awsiam.Role {
	return awsiam.NewRole(p.Construct, jsii.String("RedriveRole"), &awsiam.RoleProps{
		AssumedBy:          awsiam.NewArnPrincipal(jsii.String(principalARN)),
		Description:        jsii.String("agentdlq redrive of " + def.Name + ": assumed only by the owner's (" + def.Owner + ") named principal"),
		MaxSessionDuration: awscdk.Duration_Hours(jsii.Number(1)),
	})
}

// grantRedrive gives the redrive role what `agentdlq redrive` needs: the move
// tasks and the selective redrive (receive and delete on the DLQ, send on the
// hot queue), the ledger's redrive count, its audit prefix, and reading the
// claim checks of oversized dead letters back.
func (p *Pipeline) grantRedrive(def pipeline.Pipeline, props *PipelineProps) {
	statements := append(p.redriveQueueAndLedgerStatements(props), p.redriveMappingAndObjectStatements(def, props)...)
	if def.Breaker.Enabled {
		// The owner's breaker control (agentdlq breaker open|close): the
		// breaker items of the ledger table and their attributes, nothing
		// of an idempotency entry.
		statements = append(statements, awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("LedgerBreakers"),
			Actions:   jsii.Strings("dynamodb:UpdateItem"),
			Resources: jsii.Strings(*props.Ledger.TableArn()),
			Conditions: &map[string]any{
				"ForAllValues:StringEquals": map[string]any{"dynamodb:Attributes": BreakerLedgerAttributes},
				"ForAllValues:StringLike":   map[string]any{"dynamodb:LeadingKeys": []string{dynamostore.KeyPrefix + "*"}},
			},
		}))
	}
	if props.QueueKey != nil {
		statements = append(statements, awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("QueueKey"),
			Actions:   jsii.Strings("kms:Decrypt", "kms:GenerateDataKey"),
			Resources: jsii.Strings(*props.QueueKey.KeyArn()),
		}))
	}
	if key := props.Bucket.EncryptionKey(); key != nil {
		statements = append(statements, awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("AuditRecordsEncryption"),
			Actions:   jsii.Strings("kms:GenerateDataKey", "kms:Decrypt"), // Decrypt: the claim checks and the audit read back
			Resources: jsii.Strings(*key.KeyArn()),
		}))
	}
	policy := awsiam.NewPolicy(p.Construct, jsii.String("RedrivePolicy"), &awsiam.PolicyProps{
		Roles:      &[]awsiam.IRole{p.RedriveRole},
		Statements: &statements,
	})
	suppress(policy, "AwsSolutions-IAM5",
		"the audit records are one object per decision under the pipeline's own prefix <pipeline>/audit/*; the key is chosen at run time",
		`/^Resource::<.*\.Arn>\/`+regexp.QuoteMeta(def.Name)+`\/audit\/\*$/`)
	suppress(policy, "AwsSolutions-IAM5",
		"claim checks are one object per oversized dead letter under the pipeline's own prefix <pipeline>/evidence/*, named by date and message id at run time; the redrive reads them back",
		`/^Resource::<.*\.Arn>\/`+regexp.QuoteMeta(def.Name)+`\/evidence\/\*$/`)
	suppress(policy, "AwsSolutions-IAM5",
		"a repair keeps the original of each repaired task as one object under the pipeline's own prefix <pipeline>/repairs/*, named by date and message id at run time",
		`/^Resource::<.*\.Arn>\/`+regexp.QuoteMeta(def.Name)+`\/repairs\/\*$/`)
	suppress(policy, "AwsSolutions-IAM5",
		"sqs:ListQueues and lambda:ListEventSourceMappings support no resource-level permission and return identifiers only; `agentdlq redrive` finds the pipeline's queues by their agentdlq tags, and pause the worker's mapping by the hot queue's ARN",
		"Resource::*")
}

// redriveQueueAndLedgerStatements are the redrive role's on the queues
// (move tasks, the selective redrive, finding them by tag) and the ledger
// (its entries, the redrive count, the reconciliation).
func (p *Pipeline) redriveQueueAndLedgerStatements(props *PipelineProps) []awsiam.PolicyStatement {
	return []awsiam.PolicyStatement{
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid: jsii.String("MoveTasksAndSelectiveRedriveFromTheDLQ"),
			Actions: jsii.Strings(append(append([]string(nil), MoveTaskActions...),
				"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility",
				"sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:ListQueueTags")...),
			Resources: jsii.Strings(*p.DLQ.QueueArn()),
		}),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("SendBackToTheHotQueue"),
			Actions:   jsii.Strings("sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:ListQueueTags"),
			Resources: jsii.Strings(*p.HotQueue.QueueArn()),
		}),
		// The CLI finds the pipeline's queues by their agentdlq tags: ListQueues
		// has no resource-level permissions and returns URLs only.
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("FindTheQueuesByTag"),
			Actions:   jsii.Strings("sqs:ListQueues"),
			Resources: jsii.Strings("*"),
		}),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("LedgerEntries"),
			Actions:   jsii.Strings("dynamodb:GetItem"),
			Resources: jsii.Strings(*props.Ledger.TableArn()),
		}),
		// The redrive writes the redrive count and nothing else of an entry:
		// it cannot mark a key done, drop a receipt or reset a dead-letter
		// count. ReturnValues stays free: GetItem reads the whole item anyway.
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:        jsii.String("LedgerRedriveCount"),
			Actions:    jsii.Strings("dynamodb:UpdateItem"),
			Resources:  jsii.Strings(*props.Ledger.TableArn()),
			Conditions: &map[string]any{"ForAllValues:StringEquals": map[string]any{"dynamodb:Attributes": RedriveLedgerAttributes}},
		}),
		// The owner's reconciliation of an unknown effect: a confirmed effect
		// marks the key done with its receipt, no effect clears
		// effect_started. Its own statement, so that one request cannot mix
		// it with the redrive count.
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:        jsii.String("LedgerReconcile"),
			Actions:    jsii.Strings("dynamodb:UpdateItem"),
			Resources:  jsii.Strings(*props.Ledger.TableArn()),
			Conditions: &map[string]any{"ForAllValues:StringEquals": map[string]any{"dynamodb:Attributes": ReconcileLedgerAttributes}},
		}),
	}
}

// redriveMappingAndObjectStatements are the redrive role's on the worker's
// event source mapping (pause and resume) and on the pipeline's objects
// (audit, claim checks, repaired originals).
func (p *Pipeline) redriveMappingAndObjectStatements(def pipeline.Pipeline, props *PipelineProps) []awsiam.PolicyStatement {
	return []awsiam.PolicyStatement{
		// Pause and resume: the worker's event source mapping, and only it.
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("PauseAndResumeTheWorker"),
			Actions:   jsii.Strings(PauseAction),
			Resources: jsii.Strings(*p.EventSource.EventSourceMappingArn()),
		}),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("FindTheWorkersMapping"),
			Actions:   jsii.Strings("lambda:ListEventSourceMappings"),
			Resources: jsii.Strings("*"),
		}),
		// The audit: written one object per decision, and read back by
		// `redrive plan` and `reject` (the groups already rejected or
		// reconciled), under the pipeline's own prefix only.
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("AuditRecords"),
			Actions:   jsii.Strings("s3:PutObject", "s3:GetObject"),
			Resources: jsii.Strings(*props.Bucket.ArnForObjects(jsii.String(def.Name + "/audit/*"))),
		}),
		// A dead letter too large for the DLQ gave up attributes to a claim
		// check (the worker's ClaimChecksOfOversizedDeadLetters): select
		// reads it back to send the letter with every original attribute.
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("ReadClaimChecks"),
			Actions:   jsii.Strings("s3:GetObject"),
			Resources: jsii.Strings(*props.Bucket.ArnForObjects(jsii.String(def.Name + "/evidence/*"))),
		}),
		// A repair keeps the original of the task it replaces (agentdlq
		// redrive repair): written once, never read back by the role.
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("KeepRepairedOriginals"),
			Actions:   jsii.Strings("s3:PutObject"),
			Resources: jsii.Strings(*props.Bucket.ArnForObjects(jsii.String(def.Name + "/repairs/*"))),
		}),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:        jsii.String("ListAuditRecords"),
			Actions:    jsii.Strings("s3:ListBucket"),
			Resources:  jsii.Strings(*props.Bucket.BucketArn()),
			Conditions: &map[string]any{"StringLike": map[string]any{"s3:prefix": []string{def.Name + "/audit/*"}}},
		}),
	}
}

// outputs exports what operators and the CLI need in AWS (the
// AGENTDLQ_HOT_QUEUE_URL/AGENTDLQ_DLQ_URL overrides, the role to assume).
func (p *Pipeline) outputs(def pipeline.Pipeline) {
	for _, o := range []struct{ id, value, what string }{
		{"HotQueueUrl", *p.HotQueue.QueueUrl(), "hot queue URL"},
		{"DLQUrl", *p.DLQ.QueueUrl(), "DLQ URL"},
		{"RedriveRoleArn", *p.RedriveRole.RoleArn(), "redrive role (owner " + def.Owner + " only)"},
		{"WorkerEventSourceMappingId", *p.EventSource.EventSourceMappingId(), "the worker's event source mapping (pause and resume)"},
		{"AlarmTopicArn", *p.AlarmTopic.TopicArn(), "alarm topic: subscribe the on-call here"},
		{"DashboardName", *p.Dashboard.DashboardName(), "CloudWatch dashboard"},
	} {
		awscdk.NewCfnOutput(p.Construct, jsii.String(o.id), &awscdk.CfnOutputProps{
			Value:       jsii.String(o.value),
			Description: jsii.String("agentdlq " + def.Name + ": " + o.what),
		})
	}
}
