// Package sizecost measures what a task's size costs in SQS requests as it
// goes through the drain: the producer's send, the event source mapping's
// receive and delete, and the worker's dead-letter send of a large letter.
//
// SQS bills each 64 KiB chunk of a request's payload as one request (a 1
// MiB send is 16 requests; Amazon SQS pricing, read 2026-12-07). Counter is
// an SDK middleware that counts, per operation, the calls a client made,
// the message payload they carried as SQS sizes a message (body, and each
// attribute's name, data type and value) and the requests they are billed
// as. Measure sends tasks of one size through the real worker on the
// emulators (local/runner) with a counting client at each of the three
// places, and returns the counts; docs/worker.md ("Large tasks and claim
// checks") turns them into the claim-check arithmetic. No timing is
// measured or asserted.
package sizecost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/agentdlq/agentdlq/internal/awsmeter"
	"github.com/agentdlq/agentdlq/local/runner"
	"github.com/agentdlq/agentdlq/local/workload"
	"github.com/agentdlq/agentdlq/pipeline"
)

// Billed is the number of requests SQS bills for one call carrying payload
// bytes of messages: one, and one more for each further 64 KiB chunk
// (awsmeter.BilledSQS, the load bench's count).
func Billed(payload int) int { return int(awsmeter.BilledSQS(payload)) }

// EmptyReceive is the operation name under which a Counter counts the
// ReceiveMessage calls that returned nothing.
const EmptyReceive = "ReceiveMessage (empty)"

// Op is what one operation of a client cost.
type Op struct {
	// Calls are the calls that succeeded.
	Calls int `json:"calls"`
	// PayloadBytes is the message payload they carried, as SQS sizes a
	// message: body plus each attribute's name, data type and value (sent,
	// or returned by ReceiveMessage).
	PayloadBytes int `json:"payload_bytes"`
	// Billed is the requests SQS bills for them (Billed of each call's
	// payload).
	Billed int `json:"billed_requests"`
}

// Counter counts the SQS calls of the clients it is installed on, by
// operation. The zero value is not usable: use NewCounter.
type Counter struct {
	mu  sync.Mutex
	ops map[string]*Op
}

// NewCounter returns an empty counter.
func NewCounter() *Counter { return &Counter{ops: map[string]*Op{}} }

// Option installs c on an SQS client: sqs.NewFromConfig(cfg, c.Option()).
func (c *Counter) Option() func(*sqs.Options) {
	return func(o *sqs.Options) {
		o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
			return s.Initialize.Add(middleware.InitializeMiddlewareFunc("agentdlq-sizecost",
				func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					out, md, err := next.HandleInitialize(ctx, in)
					if err == nil {
						op := awsmiddleware.GetOperationName(ctx)
						if r, ok := out.Result.(*sqs.ReceiveMessageOutput); ok && len(r.Messages) == 0 {
							// An empty long poll: its count follows the idle
							// time, not the tasks' size.
							op = EmptyReceive
						}
						c.add(op, payload(in.Parameters, out.Result))
					}
					return out, md, err
				}), middleware.After)
		})
	}
}

func (c *Counter) add(op string, bytes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	o := c.ops[op]
	if o == nil {
		o = &Op{}
		c.ops[op] = o
	}
	o.Calls++
	o.PayloadBytes += bytes
	o.Billed += Billed(bytes)
}

// Ops returns the counts so far, by operation name ("SendMessage", …).
func (c *Counter) Ops() map[string]Op {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]Op, len(c.ops))
	for k, v := range c.ops {
		out[k] = *v
	}
	return out
}

// payload is the message payload of one call: what a send carries, or
// what a receive returns; zero for calls that carry no message.
func payload(in, out any) int {
	n := 0
	switch v := in.(type) {
	case *sqs.SendMessageInput:
		n += len(aws.ToString(v.MessageBody)) + attrBytes(v.MessageAttributes) + sysAttrBytes(v.MessageSystemAttributes)
	case *sqs.SendMessageBatchInput:
		for _, e := range v.Entries {
			n += len(aws.ToString(e.MessageBody)) + attrBytes(e.MessageAttributes) + sysAttrBytes(e.MessageSystemAttributes)
		}
	}
	if v, ok := out.(*sqs.ReceiveMessageOutput); ok {
		for _, m := range v.Messages {
			n += len(aws.ToString(m.Body)) + attrBytes(m.MessageAttributes)
		}
	}
	return n
}

func attrBytes(attrs map[string]types.MessageAttributeValue) int {
	n := 0
	for name, a := range attrs {
		n += len(name) + len(aws.ToString(a.DataType)) + len(aws.ToString(a.StringValue)) + len(a.BinaryValue)
	}
	return n
}

func sysAttrBytes(attrs map[string]types.MessageSystemAttributeValue) int {
	n := 0
	for name, a := range attrs {
		n += len(name) + len(aws.ToString(a.DataType)) + len(aws.ToString(a.StringValue)) + len(a.BinaryValue)
	}
	return n
}

// Config is one measurement: Tasks tasks of Kind, each body BodyBytes
// long, through one pipeline's queues on the emulators.
type Config struct {
	// AWS is required: pointed at the emulators.
	AWS aws.Config
	// Pipeline and Queues are required: the queues exist (and are empty).
	Pipeline *pipeline.Pipeline
	Queues   pipeline.Queues
	// Table is required: the ledger table (created when missing).
	Table string
	// BodyBytes is required: each task's body length in bytes, at most the
	// hot queue's max_message_bytes.
	BodyBytes int
	// Tasks is optional (default 10).
	Tasks int
	// Kind is optional (default workload.OK): workload.GuardrailReject
	// measures a dead letter of every task, sent on its first receive.
	Kind workload.Kind
}

// Result is what the tasks cost, by the place of the call.
type Result struct {
	BodyBytes int           `json:"body_bytes"`
	Kind      workload.Kind `json:"kind"`
	Tasks     int           `json:"tasks"`
	// Producer: the sends to the hot queue (one SendMessage a task, as a
	// producer of large tasks must: a batch carries at most 1 MiB).
	Producer map[string]Op `json:"producer"`
	// Mapping: the event source mapping's receives and deletes (Lambda's
	// own calls, billed to the queue's owner all the same).
	Mapping map[string]Op `json:"mapping"`
	// Worker: the worker's calls (dead-letter sends, visibility changes).
	Worker map[string]Op `json:"worker"`
	// Deleted is the records the mapping deleted from the hot queue.
	Deleted int `json:"deleted"`
}

// BilledPerTask is the billed requests of the calls that carried or
// settled the tasks, over the tasks: the empty receives of an idle
// mapping and the local mapping's GetQueueAttributes (its idle check,
// which Lambda does not make) left out.
func (r Result) BilledPerTask() float64 {
	total := 0
	for _, m := range []map[string]Op{r.Producer, r.Mapping, r.Worker} {
		for name, o := range m {
			if name != EmptyReceive && name != "GetQueueAttributes" {
				total += o.Billed
			}
		}
	}
	return float64(total) / float64(r.Tasks)
}

// Measure sends the tasks, drains them with the real worker, and returns
// what every call cost.
func Measure(ctx context.Context, cfg Config) (Result, error) {
	if cfg.Pipeline == nil || cfg.Table == "" || cfg.Queues.HotURL == "" {
		return Result{}, errors.New("sizecost: Pipeline, Queues and Table are required")
	}
	if cfg.Tasks == 0 {
		cfg.Tasks = 10
	}
	if cfg.Kind == "" {
		cfg.Kind = workload.OK
	}
	if cfg.BodyBytes > cfg.Pipeline.MaxMessageBytes {
		return Result{}, fmt.Errorf("sizecost: a body of %d bytes exceeds the hot queue's %d", cfg.BodyBytes, cfg.Pipeline.MaxMessageBytes)
	}
	producer, mapping, worker := NewCounter(), NewCounter(), NewCounter()
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	l, err := runner.Setup(ctx, runner.Config{AWS: cfg.AWS, Pipeline: cfg.Pipeline, Queues: &cfg.Queues, Table: cfg.Table,
		WorkerSQS: sqs.NewFromConfig(cfg.AWS, worker.Option()), Logger: quiet})
	if err != nil {
		return Result{}, err
	}
	send := sqs.NewFromConfig(cfg.AWS, producer.Option())
	prefix := fmt.Sprintf("size%d-%d", cfg.BodyBytes, time.Now().UnixNano())
	for i := range cfg.Tasks {
		body, err := Pad(workload.Make(prefix, i, cfg.Kind, 0).Body, cfg.BodyBytes)
		if err != nil {
			return Result{}, err
		}
		if _, err := send.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(cfg.Queues.HotURL), MessageBody: aws.String(body)}); err != nil {
			return Result{}, fmt.Errorf("sizecost: send a %d-byte task: %w", len(body), err)
		}
	}
	stats, _, err := l.Drain(ctx, runner.DrainOptions{SQS: sqs.NewFromConfig(cfg.AWS, mapping.Option()), IdleTimeout: 5 * time.Second})
	if err != nil {
		return Result{}, err
	}
	return Result{BodyBytes: cfg.BodyBytes, Kind: cfg.Kind, Tasks: cfg.Tasks,
		Producer: producer.Ops(), Mapping: mapping.Ops(), Worker: worker.Ops(), Deleted: int(stats.Deleted)}, nil
}

// Pad lengthens a task body to n bytes by padding its args.query, which
// every workload body (but the one that is not JSON) has and the sample
// tools read as free text. A body already n bytes or longer is returned
// as it is.
func Pad(body string, n int) (string, error) {
	if len(body) >= n {
		return body, nil
	}
	const q = `"query":"`
	i := strings.Index(body, q)
	if i < 0 {
		return "", errors.New("sizecost: the body has no args.query to pad")
	}
	i += len(q)
	return body[:i] + strings.Repeat("x", n-len(body)) + body[i:], nil
}

// Table writes results as a Markdown table: per task, the billed requests
// and payload of each place, and the total.
func Table(w io.Writer, results []Result) {
	fmt.Fprintln(w, "| body | kind | producer send: billed/task | mapping receive: billed/task | mapping delete: calls/task | worker dead-letter send: billed/task (payload/task) | other worker calls/task | total billed/task |")
	fmt.Fprintln(w, "|---:|---|---:|---:|---:|---:|---:|---:|")
	for _, r := range results {
		per := func(n int) string { return fmt.Sprintf("%.2f", float64(n)/float64(r.Tasks)) }
		send := r.Producer["SendMessage"]
		recv := r.Mapping["ReceiveMessage"]
		del := r.Mapping["DeleteMessageBatch"]
		dl := r.Worker["SendMessageBatch"]
		other := 0
		var names []string
		for name, o := range r.Worker {
			if name != "SendMessageBatch" {
				other += o.Billed
				names = append(names, name)
			}
		}
		sort.Strings(names)
		otherText := per(other)
		if len(names) > 0 {
			otherText += " (" + strings.Join(names, ", ") + ")"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s (%s B) | %s | %.2f |\n", humanBytes(r.BodyBytes), r.Kind,
			per(send.Billed), per(recv.Billed), per(del.Calls), per(dl.Billed), per(dl.PayloadBytes), otherText, r.BilledPerTask())
	}
}

func humanBytes(n int) string {
	switch {
	case n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n%1024 == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}
