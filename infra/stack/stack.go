package stack

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
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
	// CtxRedrivePrincipals maps every pipeline name to the IAM role or user
	// ARN that alone may assume its redrive role (required: a redrive role
	// trusts named principals only).
	CtxRedrivePrincipals = "agentdlq:redrivePrincipals"
	// CtxDeployRole is the ARN of the principal that deploys the stack, the
	// one principal exempt from the DLQ's deny of SetQueueAttributes,
	// DeleteQueue, AddPermission and RemovePermission (default: the CDK
	// bootstrap's CloudFormation execution role, cdk-<qualifier>-cfn-exec-role-…).
	CtxDeployRole = "agentdlq:deployRoleArn"
	// CtxQueueEncryption is "sqs" (default: SSE-SQS) or "kms" (a
	// customer-managed key with rotation for every queue of the stack).
	CtxQueueEncryption = "agentdlq:queueEncryption"
)

// Props configures agentdlq's parts: the shared parts, one Pipeline per
// definition and the triage. New puts them into a stack of their own; Add
// puts them into a stack the caller already has.
type Props struct {
	// Pipelines is required: the definition file's pipelines (pipeline.Load).
	Pipelines []pipeline.Pipeline
	// WorkerAssetDir and TriageAssetDir are required: directories holding
	// each Lambda's arm64 bootstrap for provided.al2023: the worker's (the
	// team's own, or agentdlq's sample worker) and the triage's
	// (github.com/agentdlq/agentdlq/triage/lambda). docs/deploying.md gives
	// the go build command that writes them from any module.
	WorkerAssetDir string
	TriageAssetDir string
	// RedrivePrincipals is required: pipeline name → the IAM role or user ARN
	// that alone may assume that pipeline's redrive role, one for every
	// pipeline (context agentdlq:redrivePrincipals).
	RedrivePrincipals map[string]string
	// DeployRoleARN is optional: the IAM role or user ARN that deploys the
	// stack, the one principal allowed to change or delete a DLQ (see
	// PipelineProps.DeployRoleARN for the default).
	DeployRoleARN string
	// WorkerVersion is optional (default dev).
	WorkerVersion string
	// RunbookURL is optional (default RUNBOOK.md).
	RunbookURL string
	// QueueKMS is optional (default false, SSE-SQS): encrypt every queue with
	// one customer-managed KMS key instead.
	QueueKMS bool
	// StackProps is optional and read by New only: description, synthesizer,
	// tags. Leave Env unset for an environment-agnostic stack (what `cdk
	// synth` needs offline).
	StackProps *awscdk.StackProps
}

// Parts are the constructs that Add (and New) create.
type Parts struct {
	// Construct is the scope that holds them: Add's own construct, or the
	// stack that New creates.
	constructs.Construct
	Shared    *Shared
	Pipelines []*Pipeline
	Triage    *Triage
	// QueueKey is the queues' key when Props.QueueKMS is set, nil otherwise.
	QueueKey awskms.Key
}

// Stack is an agentdlq stack and its constructs.
type Stack struct {
	awscdk.Stack
	Parts
}

// principalARN is what a redrive or deploy principal may be: an IAM role or
// user, by ARN (an account root would let anyone in the account in).
var principalARN = regexp.MustCompile(`^arn:aws[a-z-]*:(iam::\d{12}:(role|user)/.+|sts::\d{12}:assumed-role/.+)$`)

// checkPrincipal accepts an IAM role or user ARN, or an unresolved token
// (a role of the caller's own app).
func checkPrincipal(arn string) bool {
	return principalARN.MatchString(arn) || *awscdk.Token_IsUnresolved(arn)
}

// Validate reports every problem of the props at once, before anything is created.
func (props *Props) Validate() error {
	if props == nil {
		return errors.New("agentdlq: props are required")
	}
	// Every problem is a *PropsError (errors.As) naming the field at fault.
	var errs []error
	if len(props.Pipelines) == 0 {
		errs = append(errs, propsErr("Props.Pipelines", "", "is empty: give at least one pipeline definition (pipeline.Load's File.Pipelines, or pipeline.Pipeline values)"))
	}
	known := map[string]bool{}
	for i := range props.Pipelines {
		def := props.Pipelines[i]
		def.ApplyDefaults()
		if err := def.Validate(); err != nil {
			errs = append(errs, err)
		}
		if known[def.Name] {
			errs = append(errs, propsErr("Props.Pipelines", def.Name, "defines this pipeline twice"))
		}
		known[def.Name] = true
		if props.RedrivePrincipals[def.Name] == "" && def.Name != "" {
			errs = append(errs, propsErr("Props.RedrivePrincipals", def.Name,
				"has no redrive principal for this pipeline: map its name to the IAM role or user ARN that alone may redrive it, e.g. RedrivePrincipals: map[string]string{%q: \"arn:aws:iam::111122223333:role/PlatformOncall\"}", def.Name))
		}
	}
	for _, field := range []struct{ name, dir, pkg string }{
		{"Props.WorkerAssetDir", props.WorkerAssetDir, workerPackage},
		{"Props.TriageAssetDir", props.TriageAssetDir, triagePackage},
	} {
		if err := checkAssetDir(field.name, field.dir, field.pkg); err != nil {
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
			errs = append(errs, propsErr("Props.RedrivePrincipals", "", "names pipeline %q, which Props.Pipelines does not define", name))
		}
		if arn := props.RedrivePrincipals[name]; arn != "" && !checkPrincipal(arn) {
			errs = append(errs, propsErr("Props.RedrivePrincipals", name, "%q is not an IAM role or user ARN (arn:aws:iam::ACCOUNT:role/NAME)", arn))
		}
	}
	if props.DeployRoleARN != "" && !checkPrincipal(props.DeployRoleARN) {
		errs = append(errs, propsErr("Props.DeployRoleARN", "", "%q is not an IAM role or user ARN", props.DeployRoleARN))
	}
	return errors.Join(errs...)
}

// New validates props and creates a stack of its own holding the parts: the
// shared parts, one Pipeline per definition and the triage. It creates
// nothing when props are invalid. infra/main.go calls it (through
// FromContext).
func New(scope constructs.Construct, id string, props *Props) (s *Stack, err error) {
	if err := props.Validate(); err != nil {
		return nil, err
	}
	if err := checkScope(scope, id, false); err != nil {
		return nil, err
	}
	defer func() {
		if recoverInto(&err, "agentdlq stack "+id, recover()) {
			s = nil
		}
	}()
	sp := awscdk.StackProps{}
	if props.StackProps != nil {
		sp = *props.StackProps
	}
	if sp.Description == nil {
		sp.Description = jsii.String("agentdlq: hot queues, DLQs, workers, triage, alarms and owner-only redrive roles")
	}
	s = &Stack{Stack: awscdk.NewStack(scope, jsii.String(id), &sp)}
	parts, err := build(s.Stack, props)
	if err != nil {
		return nil, err
	}
	s.Parts = *parts
	return s, nil
}

// Add validates props and adds the parts to a stack the caller already has,
// under one construct named id: the shared parts, one Pipeline per
// definition (one call adds one pipeline, or several) and the triage.
// Invalid props, a scope outside any stack or an id already taken are
// returned as errors, and nothing is created; props.StackProps is ignored.
//
//	parts, err := stack.Add(myStack, "AgentDLQ", &stack.Props{
//		Pipelines:         file.Pipelines,
//		WorkerAssetDir:    "dist/worker",
//		TriageAssetDir:    "dist/triage",
//		RedrivePrincipals: map[string]string{"orders": "arn:aws:iam::111122223333:role/OrdersOncall"},
//	})
func Add(scope constructs.Construct, id string, props *Props) (parts *Parts, err error) {
	if err := props.Validate(); err != nil {
		return nil, err
	}
	if err := checkScope(scope, id, true); err != nil {
		return nil, err
	}
	defer func() {
		if recoverInto(&err, "agentdlq "+id, recover()) {
			parts = nil
		}
	}()
	return build(constructs.NewConstruct(scope, jsii.String(id)), props)
}

// build creates the parts directly under scope (New's stack keeps the
// logical ids it always had).
func build(scope constructs.Construct, props *Props) (*Parts, error) {
	parts := &Parts{Construct: scope}
	shared, err := NewShared(scope, "Shared")
	if err != nil {
		return nil, err
	}
	parts.Shared = shared
	var queueKey awskms.IKey
	if props.QueueKMS {
		parts.QueueKey = awskms.NewKey(scope, jsii.String("QueueKey"), &awskms.KeyProps{
			Description:       jsii.String("agentdlq queues"),
			EnableKeyRotation: jsii.Bool(true),
			RemovalPolicy:     awscdk.RemovalPolicy_RETAIN,
		})
		denyForeignGrants(parts.QueueKey)
		queueKey = parts.QueueKey
	}
	for i := range props.Pipelines {
		def := props.Pipelines[i]
		p, err := NewPipeline(scope, def.Name, &PipelineProps{
			Pipeline:            &def,
			Ledger:              shared.Ledger,
			Bucket:              shared.EvalBucket,
			AlarmKey:            shared.AlarmKey,
			LogKey:              shared.DataKey,
			WorkerAssetDir:      props.WorkerAssetDir,
			WorkerVersion:       props.WorkerVersion,
			QueueKey:            queueKey,
			RedrivePrincipalARN: props.RedrivePrincipals[def.Name],
			DeployRoleARN:       props.DeployRoleARN,
			RunbookURL:          props.RunbookURL,
		})
		if err != nil {
			return nil, err
		}
		parts.Pipelines = append(parts.Pipelines, p)
	}
	t, err := NewTriage(scope, "Triage", &TriageProps{
		Pipelines: parts.Pipelines,
		Ledger:    shared.Ledger,
		Bucket:    shared.EvalBucket,
		AlarmKey:  shared.AlarmKey,
		LogKey:    shared.DataKey,
		QueueKey:  queueKey,
		AssetDir:  props.TriageAssetDir,
	})
	if err != nil {
		return nil, err
	}
	parts.Triage = t
	return parts, nil
}

// checkScope returns an error where CDK would panic: no scope, an id that
// is empty or already taken in scope, or (inStack) a scope in no stack.
func checkScope(scope constructs.Construct, id string, inStack bool) error {
	if scope == nil {
		return fmt.Errorf("agentdlq %q: scope is required", id)
	}
	if strings.TrimSpace(id) == "" {
		return errors.New("agentdlq: construct id is required")
	}
	if scope.Node().TryFindChild(jsii.String(id)) != nil {
		return fmt.Errorf("agentdlq: %s already has a construct named %q", *scope.Node().Path(), id)
	}
	if !inStack {
		return nil
	}
	for _, c := range *scope.Node().Scopes() {
		if *awscdk.Stack_IsStack(c) {
			return nil
		}
	}
	return fmt.Errorf("agentdlq %q: scope %q is in no stack: add the parts to an awscdk.Stack", id, *scope.Node().Path())
}

// recoverInto turns a panic raised through jsii while constructs are created
// into the function's error: a CDK check that validation did not foresee.
// The scope may then hold some of the constructs; the app must not synthesize.
// It reports whether there was a panic.
func recoverInto(err *error, what string, r any) bool {
	if r == nil {
		return false
	}
	*err = fmt.Errorf("%s: %v", what, r)
	return true
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
		DeployRoleARN:  get(CtxDeployRole, ""),
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
			errs = append(errs, fmt.Errorf("context %s must be an object of pipeline name to IAM role or user ARN (or, with -c, pipeline=ARN[,pipeline=ARN…])", CtxRedrivePrincipals))
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
	if err := props.Validate(); err != nil {
		return nil, contextHints(err)
	}
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
