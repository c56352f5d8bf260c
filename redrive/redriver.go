package redrive

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"

	"github.com/agentdlq/agentdlq/events/agenttask"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/dlq"
	"github.com/agentdlq/agentdlq/triage/report"
)

// queueAPI is the SQS calls every redrive action makes: the DLQ's tags for
// the gate and the queues' attributes for the destination and depth checks.
type queueAPI interface {
	ListQueueTags(ctx context.Context, params *sqs.ListQueueTagsInput, optFns ...func(*sqs.Options)) (*sqs.ListQueueTagsOutput, error)
	GetQueueAttributes(ctx context.Context, params *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// IdentityAPI is the STS call of the identity check.
type IdentityAPI interface {
	GetCallerIdentity(ctx context.Context, params *sts.GetCallerIdentityInput, optFns ...func(*sts.Options)) (*sts.GetCallerIdentityOutput, error)
}

// API is every SQS call a Redriver makes: the selective redrive's and the
// native move task's. An *sqs.Client satisfies it; the compiler checks it,
// so no action fails at run time for a client that lacks a call.
type API interface {
	// Every action's: the DLQ's tags and the queues' attributes.
	ListQueueTags(ctx context.Context, params *sqs.ListQueueTagsInput, optFns ...func(*sqs.Options)) (*sqs.ListQueueTagsOutput, error)
	GetQueueAttributes(ctx context.Context, params *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	// The selective redrive's.
	ReceiveMessage(ctx context.Context, params *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	SendMessage(ctx context.Context, params *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	DeleteMessage(ctx context.Context, params *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	ChangeMessageVisibility(ctx context.Context, params *sqs.ChangeMessageVisibilityInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, params *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
	// The native move task's.
	StartMessageMoveTask(ctx context.Context, params *sqs.StartMessageMoveTaskInput, optFns ...func(*sqs.Options)) (*sqs.StartMessageMoveTaskOutput, error)
	ListMessageMoveTasks(ctx context.Context, params *sqs.ListMessageMoveTasksInput, optFns ...func(*sqs.Options)) (*sqs.ListMessageMoveTasksOutput, error)
	CancelMessageMoveTask(ctx context.Context, params *sqs.CancelMessageMoveTaskInput, optFns ...func(*sqs.Options)) (*sqs.CancelMessageMoveTaskOutput, error)
}

var (
	_ selectAPI = API(nil)
	_ moveAPI   = API(nil)
)

// Config configures a Redriver. New applies the defaults, then validates.
type Config struct {
	// Pipeline is required: the pipeline whose DLQ is redriven; its Owner
	// is the only actor the gate lets through.
	Pipeline *pipeline.Pipeline
	// Queues is required: the pipeline's hot queue and DLQ (URLs and ARNs).
	Queues pipeline.Queues
	// SQS is required: an *sqs.Client.
	SQS API
	// STS is required in AWS: the caller identity check (an *sts.Client).
	// New decides whether the check runs, from the clients themselves:
	// only when every client that says where it runs (an SDK client's
	// Options().BaseEndpoint; the ledger's through ledger.Dynamo.API) is on
	// a loopback address — the local emulators, where there is no IAM — is
	// it skipped, and the audit's caller is then the OS user (check
	// "local"). Nothing in a Config turns it off.
	STS IdentityAPI
	// Evidence is optional: the S3 client that reads claim checks back (an
	// *s3.Client). Select needs it to move a dead letter that gave up
	// attributes to a claim check (dlq_meta's evidence); without it such a
	// letter stays in the DLQ, counted in SelectResult.ClaimCheckFailed,
	// and the pass goes on with the others.
	Evidence EvidenceAPI
	// EvidenceBucket is the eval bucket, the only bucket claim checks are
	// read from (the worker's batch.Config.EvidenceBucket; in AWS the stack
	// output EvalBucketName). A claim check in another bucket is refused
	// (ClaimCheckOtherBucket); without it no claim check is read
	// (ClaimCheckNoBucket): either way the letter stays in the DLQ. In AWS
	// the redrive role may read only the eval bucket's <pipeline>/evidence/;
	// locally nothing else confines the read.
	EvidenceBucket string
	// EvidenceWriter is required by Repair (an *s3.Client): it keeps the
	// original of a repaired task in EvidenceBucket, under
	// <pipeline>/repairs/, before the repaired task is sent. In AWS the
	// redrive role may write only there.
	EvidenceWriter audit.S3PutAPI
	// Catalog is the worker's tools. Verify requires it and runs the
	// verifiers registered on them (agenttask.Tool.Verify). Repair checks a
	// repaired task against it (tool known, version supported) and asks
	// whether the tool mutates; without it the task is checked against the
	// contract alone, and every tool counts as mutating unless the dead
	// letter says read_only. The other actions do not read it.
	Catalog agenttask.Catalog
	// Ledger is required: every redrive is counted in it, which is how a key
	// that keeps coming back is dead-lettered as redrive_loop, and the
	// canary reads its outcome there. There is no redrive without it.
	Ledger ledger.Ledger
	// Audit is required: every action and every refusal is recorded there.
	Audit *audit.Auditor
	// Scan is optional (default: a read-only triage scan of the DLQ,
	// triage.Run): the groups the DLQ holds, for Plan, Start and Reject.
	Scan func(ctx context.Context) (*report.Report, error)
	// Logger is optional (default slog.Default()).
	Logger *slog.Logger
	// Now is optional (default time.Now).
	Now func() time.Time
	// Sleep is optional (default a timer): waits d or until ctx is done.
	Sleep func(ctx context.Context, d time.Duration) error
	// Lambda is required by Pause: the calls that find and switch the
	// worker's event source mapping (the SDK's *lambda.Client, or locally
	// the local event source mapping's switch).
	Lambda LambdaAPI
	// OnMove is optional: called after each message moved (a progress bar).
	OnMove func()
	// OnCanary is optional: called while the canary waits, after each look
	// at the ledger and the DLQ, with how many of its messages still have
	// no outcome, how long it has waited and its timeout (a progress line:
	// without a worker consuming the hot queue nothing ever comes).
	OnCanary func(pending, moved int, waited, timeout time.Duration)
	// FieldNames is optional: the caller's name for a request field a
	// refusal names (Refusal.Field: "Owner", "Fingerprints", ...), as its
	// users know it — the CLI its flag ("--owner"), the console its form
	// field. The audit records a refusal in these words, so that the record
	// says what the person saw; "" (or nil) keeps the Go name. The returned
	// *Refusal keeps the Go name in Field, for callers that branch on it.
	FieldNames func(field string) string
}

// errConfig wraps every error of New. It is also a refusal (errors.Is
// ErrRefused, code bad_input): nothing moved.
var errConfig = &Refusal{Code: redrivetype.CodeBadInput, Reason: "redrive: invalid configuration"}

// ErrNoLedger is New's refusal of a Config without a Ledger: the ledger
// counts every redrive, which is how a key that keeps coming back becomes
// redrive_loop, and the canary reads its outcome there. No redrive without it.
var ErrNoLedger = &Refusal{Code: redrivetype.CodeBadInput, Reason: "no ledger: the ledger counts every redrive, which is how a key that keeps coming back becomes redrive_loop; no redrive without it"}

// Redriver runs the redrive actions of one pipeline. Every action passes the
// gate first and leaves an audit entry, refusals included. Build it with
// New; it is safe for concurrent use.
type Redriver struct {
	cfg Config
	// tag tags a dead letter with its reason and fingerprint: the Senders
	// of the pipeline's queues' Tag, so that dlq_reason/dlq_meta count only
	// on letters the worker sent (tests swap it for one with fingerprints
	// they can spell).
	tag func(dlq.Message) dlq.Tagged
	// local is New's locality decision (see Config.STS).
	local bool

	// The caller, asked of STS at most once per Redriver (per command).
	callerMu  sync.Mutex
	caller    *audit.Caller
	callerErr error
}

// New applies the defaults, validates cfg and returns a Redriver. It fails,
// naming every problem, on a missing pipeline, queue, SQS client, ledger or
// audit store, and on a missing STS client outside a local endpoint.
func New(cfg Config) (*Redriver, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleep
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if cfg.Pipeline == nil {
		bad("Pipeline is required")
	}
	q := cfg.Queues
	if q.HotURL == "" || q.HotARN == "" || q.DLQURL == "" || q.DLQARN == "" {
		bad("Queues needs the hot queue's and the DLQ's URL and ARN")
	}
	if cfg.SQS == nil {
		bad("SQS is required")
	}
	local, lerr := Locality(cfg)
	if lerr != nil {
		// An STS that is not AWS's while the check must run: a refusal of
		// its own (sts_endpoint_untrusted), not a bad Config.
		return nil, lerr
	}
	if cfg.STS == nil && !local {
		bad("STS is required outside the local emulators: the gate checks the caller is the pipeline's redrive role")
	}
	if cfg.Ledger == nil {
		errs = append(errs, ErrNoLedger)
	}
	if cfg.Audit == nil {
		bad("Audit is required: every action and refusal is audited")
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", errConfig, errors.Join(errs...))
	}
	r := &Redriver{cfg: cfg, local: local, tag: triage.Senders(cfg.Queues.Senders).Tag}
	if r.cfg.Scan == nil {
		r.cfg.Scan = r.triageScan
	}
	return r, nil
}

// Who is the person acting and why.
type Who struct {
	// Owner is who acts: the gate lets only the pipeline's owner through
	// (a declaration, not an authentication; see Caller).
	Owner string
	// Why is required: why this is safe (or needed) now.
	Why string
}

func (r *Redriver) log() *slog.Logger { return r.cfg.Logger }

func (r *Redriver) now() time.Time { return r.cfg.Now() }

func (r *Redriver) sleep(ctx context.Context, d time.Duration) error { return r.cfg.Sleep(ctx, d) }

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// identify is the caller: asked of STS the first time (in AWS), then
// remembered, so that a command calls STS once however many records it
// writes. Locally it is the OS user, without a call.
func (r *Redriver) identify(ctx context.Context) (audit.Caller, error) {
	r.callerMu.Lock()
	defer r.callerMu.Unlock()
	if r.caller == nil {
		c, err := lookupCaller(ctx, r.cfg.STS, r.local)
		r.caller, r.callerErr = &c, err
	}
	return *r.caller, r.callerErr
}

// Identify asks who the caller is now, as the gate will (in AWS one STS
// call, then remembered; locally the OS user, no call), so that every
// record the Redriver writes after it names the caller as checked, the
// refusals of its pure checks (owner, why, bad input) included, which
// otherwise carry CallerNotChecked: they cost no AWS call. A caller that
// acts for a person on every request (the console) calls it first. A
// failure is in the Caller (CallerSTSFailed) and returned; the gate refuses
// on it again.
func (r *Redriver) Identify(ctx context.Context) (audit.Caller, error) { return r.identify(ctx) }

// knownCaller is the caller as far as it is known without an AWS call: what
// identify found, or locally the OS user, or else the OS user not checked.
func (r *Redriver) knownCaller() audit.Caller {
	r.callerMu.Lock()
	defer r.callerMu.Unlock()
	switch {
	case r.caller != nil:
		return *r.caller
	case r.local:
		return audit.Caller{Check: audit.CallerLocal, OSUser: audit.OSUser()}
	}
	return audit.UncheckedCaller()
}

// authorize runs the gate: the DLQ's tags (and its existence), then, in AWS,
// the caller's identity.
func (r *Redriver) authorize(ctx context.Context, who Who, rate int) error {
	return r.authorizeAs(ctx, "", who, rate)
}

// authorizeAs is authorize for action, whose refusals speak of it.
func (r *Redriver) authorizeAs(ctx context.Context, action audit.Action, who Who, rate int) error {
	if r.cfg.Pipeline == nil {
		return refuse(redrivetype.CodeBadInput, "no pipeline")
	}
	// The pure checks first, so that bad input costs no AWS call.
	if err := r.pureGateAs(action, who, rate); err != nil {
		return err
	}
	tags, err := r.cfg.SQS.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: aws.String(r.cfg.Queues.DLQURL)})
	if err != nil {
		return r.queueErr(err, r.cfg.Queues.DLQURL)
	}
	id := identity{Local: r.local}
	if !r.local {
		id.RedriveRole = tags.Tags[pipeline.TagRedriveRole]
		c, err := r.identify(ctx)
		if err != nil {
			return err
		}
		id.CallerARN = c.ARN
	} else {
		r.log().InfoContext(ctx, "redrive gate: every endpoint is local, caller identity check skipped",
			"pipeline", r.cfg.Pipeline.Name, "queue", r.cfg.Queues.DLQURL)
	}
	return gate(gateInput{Action: action, Pipeline: r.cfg.Pipeline, Owner: who.Owner, Why: who.Why, Rate: rate, QueueTags: tags.Tags, identity: id})
}

// queueErr turns a missing queue into a refusal and keeps any other error.
func (r *Redriver) queueErr(err error, url string) error {
	var nf *sqstypes.QueueDoesNotExist
	var api smithy.APIError
	if errors.As(err, &nf) || (errors.As(err, &api) && (api.ErrorCode() == "AWS.SimpleQueueService.NonExistentQueue" || api.ErrorCode() == "QueueDoesNotExist")) {
		return refuse(redrivetype.CodeDLQMissing, "queue %s does not exist", url)
	}
	return fmt.Errorf("%s: %w", url, err)
}

// Depth is the DLQ's approximate message count: visible (delayed included)
// and in flight. It calls no gate and writes no audit: a read of queue
// attributes, as Select's DepthAtStart and a progress bar's total.
func (r *Redriver) Depth(ctx context.Context) (visible, inFlight int, err error) {
	d, err := r.depth(ctx)
	return d.visible, d.inFlight, err
}

// dlqDepth is the DLQ's approximate depth and its default visibility timeout.
type dlqDepth struct {
	visible, inFlight int
	visibility        time.Duration
}

func (r *Redriver) depth(ctx context.Context) (dlqDepth, error) {
	out, err := r.cfg.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(r.cfg.Queues.DLQURL),
		AttributeNames: []sqstypes.QueueAttributeName{
			sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed,
			sqstypes.QueueAttributeNameVisibilityTimeout,
		},
	})
	if err != nil {
		return dlqDepth{}, r.queueErr(err, r.cfg.Queues.DLQURL)
	}
	n := func(k sqstypes.QueueAttributeName) int { v, _ := strconv.Atoi(out.Attributes[string(k)]); return v }
	return dlqDepth{
		visible:    n(sqstypes.QueueAttributeNameApproximateNumberOfMessages) + n(sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed),
		inFlight:   n(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible),
		visibility: time.Duration(n(sqstypes.QueueAttributeNameVisibilityTimeout)) * time.Second,
	}, nil
}

// checkDestination refuses any destination but the pipeline's own hot queue:
// dest must be the hot queue's ARN (or empty, meaning it), the hot queue's
// RedrivePolicy must name this DLQ, and the DLQ's RedriveAllowPolicy (when
// set) must allow the hot queue as a source.
func (r *Redriver) checkDestination(ctx context.Context, dest string) error {
	q := r.cfg.Queues
	if dest != "" && dest != q.HotARN {
		return refuse(redrivetype.CodeDestination, "destination %s is not the pipeline's hot queue %s: a DLQ is redriven only to its own source", dest, q.HotARN)
	}
	hot, err := r.cfg.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(q.HotURL),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameRedrivePolicy, sqstypes.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return r.queueErr(err, q.HotURL)
	}
	if arn := hot.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]; arn != "" && arn != q.HotARN {
		return refuse(redrivetype.CodeDestination, "the hot queue's ARN %s is not %s", arn, q.HotARN)
	}
	dlq, err := r.cfg.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(q.DLQURL),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameRedriveAllowPolicy, sqstypes.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return r.queueErr(err, q.DLQURL)
	}
	return checkRedrivePolicies(q.HotARN, q.DLQARN,
		hot.Attributes[string(sqstypes.QueueAttributeNameRedrivePolicy)],
		dlq.Attributes[string(sqstypes.QueueAttributeNameRedriveAllowPolicy)])
}
