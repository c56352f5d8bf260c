package stack

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/agentdlq/agentdlq/pipeline"
)

// The CDK context keys the app reads (cdk.json or `cdk synth -c key=value`).
const (
	// CtxPipelines names the pipeline definition file (default pipelines.json),
	// the same file the local runner reads.
	CtxPipelines = "agentdlq:pipelines"
	// CtxStackName is the stack's id and name (default AgentDLQ).
	CtxStackName = "agentdlq:stackName"
	// CtxWorkerAsset and CtxTriageAsset are the Lambda asset directories
	// (default dist/worker and dist/triage, written by `make build`).
	CtxWorkerAsset = "agentdlq:workerAsset"
	CtxTriageAsset = "agentdlq:triageAsset"
	// CtxWorkerVersion is stamped in dlq_meta (default dev).
	CtxWorkerVersion = "agentdlq:workerVersion"
	// CtxRunbookURL is what alarm descriptions link (default RUNBOOK.md).
	CtxRunbookURL = "agentdlq:runbookUrl"
	// CtxRedrivePrincipals maps a pipeline name to the IAM ARN (role, user or
	// account root) that may assume its redrive role. A pipeline not listed
	// gets the default: the account root, on condition that the caller
	// carries the tag agentdlq:owner = the pipeline's owner.
	CtxRedrivePrincipals = "agentdlq:redrivePrincipals"
	// CtxQueueEncryption is "sqs" (default: SSE-SQS) or "kms" (a
	// customer-managed key with rotation for every queue of the stack).
	CtxQueueEncryption = "agentdlq:queueEncryption"
)

// Props configures a whole agentdlq stack.
type Props struct {
	// Pipelines is required: the definition file's pipelines.
	Pipelines []pipeline.Pipeline
	// WorkerAssetDir and TriageAssetDir are required: directories holding
	// each Lambda's arm64 bootstrap.
	WorkerAssetDir string
	TriageAssetDir string
	// WorkerVersion is optional (default dev).
	WorkerVersion string
	// RunbookURL is optional (default RUNBOOK.md).
	RunbookURL string
	// RedrivePrincipals is optional: pipeline name → IAM principal ARN that
	// may assume its redrive role (default: see CtxRedrivePrincipals).
	RedrivePrincipals map[string]string
	// QueueKMS is optional (default false, SSE-SQS): encrypt every queue with
	// one customer-managed KMS key instead.
	QueueKMS bool
	// StackProps is optional: description, synthesizer, tags. Leave Env unset
	// for an environment-agnostic stack (what `cdk synth` needs offline).
	StackProps *awscdk.StackProps
}

// Stack is an agentdlq stack and its constructs.
type Stack struct {
	awscdk.Stack
	Shared    *Shared
	Pipelines []*Pipeline
	Triage    *Triage
	QueueKey  awskms.Key
}

var principalARN = regexp.MustCompile(`^arn:aws[a-z-]*:(iam::\d{12}:(root|role/.+|user/.+)|sts::\d{12}:assumed-role/.+)$`)

// Validate reports every problem of the props at once, before anything is created.
func (props *Props) Validate() error {
	var errs []error
	if len(props.Pipelines) == 0 {
		errs = append(errs, errors.New("no pipelines: the definition file must hold at least one"))
	}
	known := map[string]bool{}
	for i := range props.Pipelines {
		def := props.Pipelines[i]
		def.ApplyDefaults()
		if err := def.Validate(); err != nil {
			errs = append(errs, err)
		}
		if known[def.Name] {
			errs = append(errs, fmt.Errorf("pipeline %q is defined twice", def.Name))
		}
		known[def.Name] = true
	}
	for _, field := range []struct{ name, dir string }{{"WorkerAssetDir", props.WorkerAssetDir}, {"TriageAssetDir", props.TriageAssetDir}} {
		if err := checkAssetDir(field.name, field.dir); err != nil {
			errs = append(errs, err)
		}
	}
	names := make([]string, 0, len(props.RedrivePrincipals))
	for name := range props.RedrivePrincipals {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !known[name] {
			errs = append(errs, fmt.Errorf("%s: unknown pipeline %q", CtxRedrivePrincipals, name))
		}
		if arn := props.RedrivePrincipals[name]; !principalARN.MatchString(arn) {
			errs = append(errs, fmt.Errorf("%s: %q for pipeline %q is not an IAM role, user or account-root ARN", CtxRedrivePrincipals, arn, name))
		}
	}
	return errors.Join(errs...)
}

// New validates props and creates the stack: the shared parts, one Pipeline
// per definition and the triage. It creates nothing when props are invalid.
func New(scope constructs.Construct, id string, props *Props) (*Stack, error) {
	if err := props.Validate(); err != nil {
		return nil, err
	}
	sp := props.StackProps
	if sp == nil {
		sp = &awscdk.StackProps{}
	}
	if sp.Description == nil {
		sp.Description = jsii.String("agentdlq: hot queues, DLQs, workers, triage, alarms and owner-only redrive roles")
	}
	s := &Stack{Stack: awscdk.NewStack(scope, jsii.String(id), sp)}
	// Access logs are delivered under a bucket policy, with ACLs disabled on
	// the log bucket, whatever the app's feature flags say.
	s.Stack.Node().SetContext(jsii.String("@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy"), true)
	s.Shared = NewShared(s.Stack, "Shared")
	if props.QueueKMS {
		s.QueueKey = awskms.NewKey(s.Stack, jsii.String("QueueKey"), &awskms.KeyProps{
			Description:       jsii.String("agentdlq queues"),
			EnableKeyRotation: jsii.Bool(true),
			RemovalPolicy:     awscdk.RemovalPolicy_RETAIN,
		})
		denyForeignGrants(s.QueueKey)
	}
	var queueKey awskms.IKey
	if s.QueueKey != nil {
		queueKey = s.QueueKey
	}
	for i := range props.Pipelines {
		def := props.Pipelines[i]
		var principal awsiam.IPrincipal
		if arn, ok := props.RedrivePrincipals[def.Name]; ok {
			principal = awsiam.NewArnPrincipal(jsii.String(arn))
		}
		p, err := NewPipeline(s.Stack, def.Name, &PipelineProps{
			Pipeline:         &def,
			Ledger:           s.Shared.Ledger,
			Bucket:           s.Shared.EvalBucket,
			AlarmKey:         s.Shared.AlarmKey,
			LogKey:           s.Shared.DataKey,
			WorkerAssetDir:   props.WorkerAssetDir,
			WorkerVersion:    props.WorkerVersion,
			QueueKey:         queueKey,
			RedrivePrincipal: principal,
			RunbookURL:       props.RunbookURL,
		})
		if err != nil {
			return nil, err
		}
		s.Pipelines = append(s.Pipelines, p)
	}
	t, err := NewTriage(s.Stack, "Triage", &TriageProps{
		Pipelines: s.Pipelines,
		Ledger:    s.Shared.Ledger,
		Bucket:    s.Shared.EvalBucket,
		AlarmKey:  s.Shared.AlarmKey,
		LogKey:    s.Shared.DataKey,
		QueueKey:  queueKey,
		AssetDir:  props.TriageAssetDir,
	})
	if err != nil {
		return nil, err
	}
	s.Triage = t
	return s, nil
}

// FromContext reads the app's context (cdk.json, -c flags), loads the pipeline
// definition file with pipeline.Load and creates the stack.
func FromContext(app awscdk.App) (*Stack, error) {
	node := app.Node()
	str := func(key, def string) (string, error) {
		v := node.TryGetContext(jsii.String(key))
		if v == nil {
			return def, nil
		}
		s, ok := v.(string)
		if !ok || s == "" {
			return "", fmt.Errorf("context %s must be a non-empty string, got %v", key, v)
		}
		return s, nil
	}
	var errs []error
	get := func(key, def string) string {
		s, err := str(key, def)
		errs = append(errs, err)
		return s
	}
	file := get(CtxPipelines, pipeline.DefaultFile)
	name := get(CtxStackName, "AgentDLQ")
	props := &Props{
		WorkerAssetDir: get(CtxWorkerAsset, "dist/worker"),
		TriageAssetDir: get(CtxTriageAsset, "dist/triage"),
		WorkerVersion:  get(CtxWorkerVersion, "dev"),
		RunbookURL:     get(CtxRunbookURL, "RUNBOOK.md"),
	}
	switch enc := get(CtxQueueEncryption, "sqs"); enc {
	case "sqs":
	case "kms":
		props.QueueKMS = true
	default:
		errs = append(errs, fmt.Errorf("context %s must be \"sqs\" or \"kms\", got %q", CtxQueueEncryption, enc))
	}
	if v := node.TryGetContext(jsii.String(CtxRedrivePrincipals)); v != nil {
		m, ok := v.(map[string]any)
		if str, isString := v.(string); isString {
			m, ok = parsePrincipals(str)
		}
		if !ok {
			errs = append(errs, fmt.Errorf("context %s must be an object of pipeline name to principal ARN (or, with -c, pipeline=ARN[,pipeline=ARN…])", CtxRedrivePrincipals))
		}
		props.RedrivePrincipals = map[string]string{}
		for k, arn := range m {
			s, _ := arn.(string)
			props.RedrivePrincipals[k] = s
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	f, err := pipeline.Load(file)
	if err != nil {
		return nil, err
	}
	props.Pipelines = f.Pipelines
	return New(app, name, props)
}

// parsePrincipals reads agentdlq:redrivePrincipals given as text, as
// `cdk -c key=value` passes it: a JSON object, or pipeline=ARN pairs
// separated by commas.
func parsePrincipals(s string) (map[string]any, bool) {
	m := map[string]any{}
	if strings.HasPrefix(strings.TrimSpace(s), "{") {
		return m, json.Unmarshal([]byte(s), &m) == nil
	}
	for _, pair := range strings.Split(s, ",") {
		name, arn, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok || name == "" {
			return nil, false
		}
		m[name] = arn
	}
	return m, true
}
