// Package awsmeter counts the AWS calls an aws-sdk-go-v2 client makes, by
// role (who made it: "worker", "mapping", "producer"...), service and
// operation: calls, HTTP attempts (each retry is a billed request), failed
// calls, the entries of batch calls, SQS's billed requests (a request is
// billed per 64 KiB chunk of its payload) and DynamoDB's consumed capacity.
// It asks DynamoDB for the capacity of every item call it sees
// (ReturnConsumedCapacity TOTAL, where the caller asked for none), so the
// counts are DynamoDB's own, not an estimate.
//
// Attach it to an aws.Config (Meter.Config) and build the clients from the
// copy; the load bench (bench/loadbench) meters the worker, the event
// source mapping and the triage scan with it.
package awsmeter

import (
	"context"
	"errors"
	"sort"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
)

// SQSChunk is the payload size SQS bills as one request: a request of up to
// 64 KiB is one, every further 64 KiB chunk one more.
const SQSChunk = 64 * 1024

// Op names a counted operation.
type Op struct {
	Role      string `json:"role"`
	Service   string `json:"service"`
	Operation string `json:"operation"`
}

// Stats are the counts of one Op.
type Stats struct {
	Op
	// Calls are the operation calls; Attempts the HTTP requests they made
	// (retries included); Errors the calls that failed after their retries,
	// ConditionFailed those DynamoDB refused on their condition (billed
	// all the same).
	Calls           int64 `json:"calls"`
	Attempts        int64 `json:"attempts"`
	Errors          int64 `json:"errors"`
	ConditionFailed int64 `json:"condition_failed,omitempty"`
	// Entries are the entries of a batch call (sent, deleted, changed) or
	// the messages a receive returned; Empty the receives that returned
	// none.
	Entries int64 `json:"entries,omitempty"`
	Empty   int64 `json:"empty,omitempty"`
	// PayloadBytes are the message bodies and attributes an SQS call sent
	// or received; BilledRequests the SQS requests it is billed as (one per
	// started 64 KiB chunk, at least one a call).
	PayloadBytes   int64 `json:"payload_bytes,omitempty"`
	BilledRequests int64 `json:"billed_requests,omitempty"`
	// WriteUnits and ReadUnits are DynamoDB's consumed capacity as its
	// responses reported it; a write refused on its condition reports none
	// and is counted in ConditionFailed (DynamoDB bills it at least one
	// write unit).
	WriteUnits float64 `json:"write_units,omitempty"`
	ReadUnits  float64 `json:"read_units,omitempty"`
}

// Meter counts. It is safe for concurrent use; the zero value is ready.
type Meter struct {
	mu  sync.Mutex
	ops map[Op]*Stats
}

// Config returns a copy of cfg whose clients count their calls under role.
func (m *Meter) Config(cfg aws.Config, role string) aws.Config {
	c := cfg.Copy()
	c.APIOptions = append(append([]func(*middleware.Stack) error(nil), cfg.APIOptions...), m.Middleware(role))
	return c
}

// Middleware returns the stack option that counts under role: an
// initialize step (one per call) and a finalize step after the retries
// (one per attempt).
func (m *Meter) Middleware(role string) func(*middleware.Stack) error {
	return func(stack *middleware.Stack) error {
		if err := stack.Initialize.Add(middleware.InitializeMiddlewareFunc("awsmeter.Calls",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				askCapacity(in.Parameters)
				out, md, err := next.HandleInitialize(ctx, in)
				m.call(Op{role, awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx)}, in.Parameters, out.Result, err)
				return out, md, err
			}), middleware.After); err != nil {
			return err
		}
		return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("awsmeter.Attempts",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				m.attempt(Op{role, awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx)})
				return next.HandleFinalize(ctx, in)
			}), middleware.After)
	}
}

func (m *Meter) stats(op Op) *Stats {
	if m.ops == nil {
		m.ops = map[Op]*Stats{}
	}
	s := m.ops[op]
	if s == nil {
		s = &Stats{Op: op}
		m.ops[op] = s
	}
	return s
}

func (m *Meter) attempt(op Op) {
	m.mu.Lock()
	m.stats(op).Attempts++
	m.mu.Unlock()
}

func (m *Meter) call(op Op, params, result any, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.stats(op)
	s.Calls++
	if err != nil {
		s.Errors++
		var ccf *ddbtypes.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			s.ConditionFailed++
		} else if ae := (smithy.APIError)(nil); errors.As(err, &ae) && ae.ErrorCode() == "ConditionalCheckFailedException" {
			s.ConditionFailed++
		}
	}
	entries, payload := sqsPayload(params, result)
	if op.Service == "SQS" {
		s.Entries += int64(entries)
		s.PayloadBytes += int64(payload)
		s.BilledRequests += BilledSQS(payload)
		if op.Operation == "ReceiveMessage" && err == nil && entries == 0 {
			s.Empty++
		}
	}
	if cc := consumed(result); cc != nil {
		s.WriteUnits += aws.ToFloat64(cc.WriteCapacityUnits)
		s.ReadUnits += aws.ToFloat64(cc.ReadCapacityUnits)
		if cc.WriteCapacityUnits == nil && cc.ReadCapacityUnits == nil && cc.CapacityUnits != nil {
			// Some endpoints (dynalite) report the total only.
			if isRead(params) {
				s.ReadUnits += *cc.CapacityUnits
			} else {
				s.WriteUnits += *cc.CapacityUnits
			}
		}
	}
}

// BilledSQS is the SQS requests a call moving payload bytes is billed as.
func BilledSQS(payload int) int64 {
	if payload <= SQSChunk {
		return 1
	}
	return int64((payload + SQSChunk - 1) / SQSChunk)
}

// askCapacity sets ReturnConsumedCapacity TOTAL on a DynamoDB item call
// that asked for none.
func askCapacity(params any) {
	const total = ddbtypes.ReturnConsumedCapacityTotal
	switch in := params.(type) {
	case *dynamodb.GetItemInput:
		if in.ReturnConsumedCapacity == "" {
			in.ReturnConsumedCapacity = total
		}
	case *dynamodb.PutItemInput:
		if in.ReturnConsumedCapacity == "" {
			in.ReturnConsumedCapacity = total
		}
	case *dynamodb.UpdateItemInput:
		if in.ReturnConsumedCapacity == "" {
			in.ReturnConsumedCapacity = total
		}
	case *dynamodb.DeleteItemInput:
		if in.ReturnConsumedCapacity == "" {
			in.ReturnConsumedCapacity = total
		}
	case *dynamodb.QueryInput:
		if in.ReturnConsumedCapacity == "" {
			in.ReturnConsumedCapacity = total
		}
	case *dynamodb.ScanInput:
		if in.ReturnConsumedCapacity == "" {
			in.ReturnConsumedCapacity = total
		}
	}
}

func isRead(params any) bool {
	switch params.(type) {
	case *dynamodb.GetItemInput, *dynamodb.QueryInput, *dynamodb.ScanInput, *dynamodb.BatchGetItemInput:
		return true
	}
	return false
}

func consumed(result any) *ddbtypes.ConsumedCapacity {
	switch out := result.(type) {
	case *dynamodb.GetItemOutput:
		return out.ConsumedCapacity
	case *dynamodb.PutItemOutput:
		return out.ConsumedCapacity
	case *dynamodb.UpdateItemOutput:
		return out.ConsumedCapacity
	case *dynamodb.DeleteItemOutput:
		return out.ConsumedCapacity
	case *dynamodb.QueryOutput:
		return out.ConsumedCapacity
	case *dynamodb.ScanOutput:
		return out.ConsumedCapacity
	}
	return nil
}

// sqsPayload returns the entries of an SQS call and the bytes of message
// bodies and attributes it moved (sent, or received).
func sqsPayload(params, result any) (entries, payload int) {
	attrs := func(m map[string]string) (n int) {
		for k, v := range m {
			n += len(k) + len(v)
		}
		return n
	}
	switch in := params.(type) {
	case *sqs.SendMessageInput:
		payload = len(aws.ToString(in.MessageBody))
		for k, v := range in.MessageAttributes {
			payload += len(k) + len(aws.ToString(v.DataType)) + len(aws.ToString(v.StringValue)) + len(v.BinaryValue)
		}
		return 1, payload
	case *sqs.SendMessageBatchInput:
		for _, e := range in.Entries {
			payload += len(aws.ToString(e.MessageBody))
			for k, v := range e.MessageAttributes {
				payload += len(k) + len(aws.ToString(v.DataType)) + len(aws.ToString(v.StringValue)) + len(v.BinaryValue)
			}
		}
		return len(in.Entries), payload
	case *sqs.DeleteMessageBatchInput:
		return len(in.Entries), 0
	case *sqs.ChangeMessageVisibilityBatchInput:
		return len(in.Entries), 0
	case *sqs.DeleteMessageInput, *sqs.ChangeMessageVisibilityInput:
		return 1, 0
	}
	if out, ok := result.(*sqs.ReceiveMessageOutput); ok {
		for _, msg := range out.Messages {
			payload += len(aws.ToString(msg.Body)) + attrs(msg.Attributes)
			for k, v := range msg.MessageAttributes {
				payload += len(k) + len(aws.ToString(v.DataType)) + len(aws.ToString(v.StringValue)) + len(v.BinaryValue)
			}
		}
		return len(out.Messages), payload
	}
	return 0, 0
}

// Snapshot returns the counts, sorted by role, service and operation.
func (m *Meter) Snapshot() []Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Stats, 0, len(m.ops))
	for _, s := range m.ops {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Op, out[j].Op
		if a.Role != b.Role {
			return a.Role < b.Role
		}
		if a.Service != b.Service {
			return a.Service < b.Service
		}
		return a.Operation < b.Operation
	})
	return out
}

// Reset forgets every count.
func (m *Meter) Reset() {
	m.mu.Lock()
	m.ops = nil
	m.mu.Unlock()
}

// ByteCounter is an io.Writer that counts the bytes and lines written to
// it and keeps nothing: the log lines a worker writes, which CloudWatch
// Logs bills per byte ingested.
type ByteCounter struct {
	mu           sync.Mutex
	bytes, lines int64
}

// Write counts p.
func (b *ByteCounter) Write(p []byte) (int, error) {
	n := int64(0)
	for _, c := range p {
		if c == '\n' {
			n++
		}
	}
	b.mu.Lock()
	b.bytes += int64(len(p))
	b.lines += n
	b.mu.Unlock()
	return len(p), nil
}

// Counts returns the bytes and lines written so far.
func (b *ByteCounter) Counts() (bytes, lines int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.bytes, b.lines
}
