package batch

import (
	"context"
	"encoding/base64"
	"errors"
	"maps"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/internal/sqsio"
	"github.com/agentdlq/agentdlq/ledger"
)

// behaviour switches of the fakes.
type behaviour int

const (
	ok behaviour = iota
	fail
	outage
	panics
)

// fakeSQS records what the processor sends and can fail or panic.
type fakeSQS struct {
	mu         sync.Mutex
	send       behaviour
	visibility behaviour
	// reject, when set, fails the entries it returns true for (a batch
	// item failure in SendMessageBatch's answer); forget leaves them out
	// of the answer altogether.
	reject func(e types.SendMessageBatchRequestEntry) bool
	forget func(e types.SendMessageBatchRequestEntry) bool
	// discard keeps only the count of the entries sent (the benchmark's
	// DLQ: a real client keeps nothing it sent).
	discard    bool
	nSent      int
	sent       []*sqs.SendMessageInput
	batches    []int // the number of entries of each SendMessageBatch call
	batchBytes []int // and the size of its messages, as SQS counts it
	visChanges []*sqs.ChangeMessageVisibilityInput
}

var _ SQSAPI = (*fakeSQS)(nil)

func (f *fakeSQS) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch f.send {
	case fail:
		return nil, &smithy.GenericAPIError{Code: "AWS.SimpleQueueService.NonExistentQueue", Message: "queue does not exist", Fault: smithy.FaultClient}
	case outage:
		return nil, errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
	case panics:
		panic("fake SQS panicked")
	}
	size := 0
	out := &sqs.SendMessageBatchOutput{}
	for i := range in.Entries {
		e := in.Entries[i]
		size += len(aws.ToString(e.MessageBody))
		for name, v := range e.MessageAttributes {
			size += len(name) + len(aws.ToString(v.DataType)) + len(aws.ToString(v.StringValue)) + base64.StdEncoding.EncodedLen(len(v.BinaryValue))
		}
		id := aws.String(aws.ToString(e.Id))
		switch {
		case f.forget != nil && f.forget(e):
		case f.reject != nil && f.reject(e):
			out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: id, Code: aws.String("InvalidMessageContents"), Message: aws.String("rejected (fake)"), SenderFault: true})
		case f.discard:
			f.nSent++
			out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{Id: id, MessageId: aws.String("dlq-msg")})
		default:
			// Copied: the processor reuses the input's memory after the call.
			f.sent = append(f.sent, sqsio.EntryInput(in.QueueUrl, &e))
			out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{Id: id, MessageId: aws.String("dlq-msg")})
		}
	}
	f.batches = append(f.batches, len(in.Entries))
	f.batchBytes = append(f.batchBytes, size)
	return out, nil
}

func (f *fakeSQS) ChangeMessageVisibility(_ context.Context, in *sqs.ChangeMessageVisibilityInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.visibility == panics {
		panic("fake SQS panicked")
	}
	if f.visibility == fail {
		return nil, &smithy.GenericAPIError{Code: "ReceiptHandleIsInvalid", Fault: smithy.FaultClient}
	}
	f.visChanges = append(f.visChanges, in)
	return &sqs.ChangeMessageVisibilityOutput{}, nil
}

// sentReasons returns the dlq_reason of every dead letter sent.
func (f *fakeSQS) sentReasons() []deadletter.Reason {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]deadletter.Reason, len(f.sent))
	for i, in := range f.sent {
		out[i] = deadletter.Reason(aws.ToString(in.MessageAttributes[deadletter.AttrReason].StringValue))
	}
	return out
}

// fakeLedger is a Memory ledger whose operations can be switched to an outage.
// complete is the done write of either path: Complete after a claim and
// CompleteReadOnly for a read-only tool. calls counts the calls by method.
type fakeLedger struct {
	*ledger.Memory
	begin, startEffect, complete, release, deadLettered, get behaviour

	callsMu sync.Mutex
	calls   map[string]int
}

// count records a call of op.
func (f *fakeLedger) count(op string) {
	f.callsMu.Lock()
	defer f.callsMu.Unlock()
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[op]++
}

// callCounts returns a copy of the calls by method.
func (f *fakeLedger) callCounts() map[string]int {
	f.callsMu.Lock()
	defer f.callsMu.Unlock()
	return maps.Clone(f.calls)
}

var _ ledger.Ledger = (*fakeLedger)(nil)

var errLedgerOutage = errors.Join(ledger.ErrUnavailable, &smithy.GenericAPIError{Code: "ProvisionedThroughputExceededException", Fault: smithy.FaultClient})

// act fails or panics as b says.
func (f *fakeLedger) act(op string, b behaviour) error {
	switch b {
	case outage:
		return errLedgerOutage
	case panics:
		panic("fake ledger " + op + " panicked")
	}
	return nil
}

func (f *fakeLedger) Begin(ctx context.Context, key, owner, digest string, now time.Time, lease time.Duration) (ledger.Entry, error) {
	f.count("Begin")
	if err := f.act("Begin", f.begin); err != nil {
		return ledger.Entry{}, err
	}
	return f.Memory.Begin(ctx, key, owner, digest, now, lease)
}

func (f *fakeLedger) CompleteReadOnly(ctx context.Context, key, owner, digest, receipt string, now time.Time) (ledger.Entry, error) {
	f.count("CompleteReadOnly")
	if err := f.act("CompleteReadOnly", f.complete); err != nil {
		return ledger.Entry{}, err
	}
	return f.Memory.CompleteReadOnly(ctx, key, owner, digest, receipt, now)
}

func (f *fakeLedger) Get(ctx context.Context, key string) (ledger.Entry, bool, error) {
	f.count("Get")
	if err := f.act("Get", f.get); err != nil {
		return ledger.Entry{}, false, err
	}
	return f.Memory.Get(ctx, key)
}

func (f *fakeLedger) Complete(ctx context.Context, key, owner, receipt string, now time.Time) error {
	f.count("Complete")
	if err := f.act("Complete", f.complete); err != nil {
		return err
	}
	return f.Memory.Complete(ctx, key, owner, receipt, now)
}

func (f *fakeLedger) DeadLettered(ctx context.Context, key string, reason deadletter.Reason, now time.Time) (ledger.Entry, error) {
	f.count("DeadLettered")
	if err := f.act("DeadLettered", f.deadLettered); err != nil {
		return ledger.Entry{}, err
	}
	return f.Memory.DeadLettered(ctx, key, reason, now)
}

func (f *fakeLedger) StartEffect(ctx context.Context, key, owner string, now time.Time) error {
	f.count("StartEffect")
	if err := f.act("StartEffect", f.startEffect); err != nil {
		return err
	}
	return f.Memory.StartEffect(ctx, key, owner, now)
}

func (f *fakeLedger) Release(ctx context.Context, key, owner string, now time.Time) error {
	f.count("Release")
	if err := f.act("Release", f.release); err != nil {
		return err
	}
	return f.Memory.Release(ctx, key, owner, now)
}

// fakeS3 keeps the claim checks put and can fail or panic.
type fakeS3 struct {
	mu   sync.Mutex
	put  behaviour
	keys []string
}

var _ S3API = (*fakeS3)(nil)

func (f *fakeS3) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch f.put {
	case fail:
		return nil, &smithy.GenericAPIError{Code: "AccessDenied", Fault: smithy.FaultClient}
	case panics:
		panic("fake S3 panicked")
	}
	f.keys = append(f.keys, aws.ToString(in.Key))
	return &s3.PutObjectOutput{}, nil
}

// lkey is the ledger key of a task of tenant "t" with idempotency key k on
// newHarness's pipeline: the handlers' Begin scopes their keys so.
func lkey(k string) string { return ledger.Key("agent-tasks", "t", k) }
