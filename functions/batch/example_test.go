package batch_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/agentdlq/agentdlq/events/agenttask"
	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/functions/batch"
	"github.com/agentdlq/agentdlq/ledger"
)

// A whole worker: decode the task, begin its idempotency key, do the work,
// say what a failure means. In a Lambda, SQS is sqs.NewFromConfig(cfg) and
// the last line is lambda.Start(p); Handle, used here, takes the same
// event as aws-lambda-go's type.
func Example() {
	catalog, err := agenttask.NewCatalog(
		agenttask.Tool{Name: "web.search", Versions: "1.x"},
		agenttask.Tool{Name: "email.send", Versions: "1.x", Mutates: true},
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	handle := func(ctx context.Context, r batch.Record) error {
		task, err := agenttask.DecodeTask(r.Body(), catalog)
		if err != nil {
			return err // poison: dead-lettered at once with its reason
		}
		r.Describe(&task) // dead letters and logs carry the task's ids
		if err := r.Begin(ctx, task.Tenant, task.IdempotencyKey, "", catalog[task.Tool].Mutates); err != nil {
			return err // done already, leased elsewhere, or ledger down
		}
		if bytes.Contains(task.Args, []byte(`"flaky"`)) {
			return batch.Transient(errors.New("upstream answered 503"))
		}
		sum := sha256.Sum256(task.Args)
		r.SetReceipt(hex.EncodeToString(sum[:]))
		return nil
	}

	dlq := &printingSQS{}
	p, err := batch.New(batch.Config{
		Handler:         handle,
		SQS:             dlq,
		DLQURL:          "https://sqs.us-east-1.amazonaws.com/123456789012/agent-tasks-dlq",
		MaxReceiveCount: 4,
		Pipeline:        "agent-tasks",
		Ledger:          ledger.NewMemory(),
		Metrics:         io.Discard,
		Logger:          slog.New(slog.DiscardHandler),
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	task := func(key, args string) string {
		return `{"task_id":"t-` + key + `","run_id":"r1","tenant":"acme","idempotency_key":"` + key +
			`","tool":"web.search","tool_version":"1","trace_id":"tr","created_at":"2026-11-29T12:00:00Z","schema_version":1,"args":` + args + `}`
	}
	record := func(id, body, receive string) events.SQSMessage {
		return events.SQSMessage{MessageId: id, Body: body, EventSource: "aws:sqs",
			Attributes: map[string]string{"ApproximateReceiveCount": receive}}
	}
	resp, err := p.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		record("m1", task("k1", `{"q":"go"}`), "1"),
		record("m2", task("k1", `{"q":"go"}`), "1"), // the same key again: a no-op
		record("m3", `{"task_id":`, "1"),
		record("m4", task("k4", `{"q":"flaky"}`), "1"),
		record("m5", task("k5", `{"q":"flaky"}`), "4"),
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range resp.BatchItemFailures {
		fmt.Println("retried:", f.ItemIdentifier)
	}
	// Output:
	// dead-lettered: json_invalid
	// dead-lettered: budget_exhausted
	// retried: m4
}

// printingSQS stands in for *sqs.Client and prints each dead letter's reason.
type printingSQS struct{}

func (printingSQS) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	out := &sqs.SendMessageBatchOutput{}
	for _, e := range in.Entries {
		fmt.Println("dead-lettered:", aws.ToString(e.MessageAttributes[deadletter.AttrReason].StringValue))
		out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{Id: e.Id})
	}
	return out, nil
}

func (printingSQS) ChangeMessageVisibility(context.Context, *sqs.ChangeMessageVisibilityInput, ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	return &sqs.ChangeMessageVisibilityOutput{}, nil
}
