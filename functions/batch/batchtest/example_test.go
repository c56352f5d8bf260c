package batchtest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/functions/batch"
	"github.com/agentdlq/agentdlq/functions/batch/batchtest"
	"github.com/agentdlq/agentdlq/ledger"
)

// refund is a platform team's own task: not an agent task of the sample
// catalog, a refund that a payment API carries out once.
type refund struct {
	ID     string `json:"refund_id"`
	Amount int    `json:"amount_cents"`
	Flaky  bool   `json:"flaky"`
	// Tenant scopes the refund id in the ledger ("" in these tests).
	Tenant string `json:"tenant"`
}

// handleRefund is the handler under test.
func handleRefund(ctx context.Context, r batch.Record) error {
	var rf refund
	if err := json.Unmarshal(r.Body(), &rf); err != nil {
		return batch.Poison(deadletter.ReasonJSONInvalid, err)
	}
	if rf.ID == "" || rf.Amount <= 0 {
		return batch.Poison(deadletter.ReasonSchemaInvalid, errors.New("refund_id and a positive amount_cents are required"))
	}
	if err := r.Begin(ctx, rf.Tenant, rf.ID, "", true); err != nil {
		return err // done already (a no-op), leased elsewhere, or the ledger is down
	}
	if rf.Flaky {
		return batch.Transient(errors.New("payment API answered 503"))
	}
	if err := r.StartEffect(ctx); err != nil {
		return err
	}
	r.SetReceipt("pay-" + rf.ID) // the payment API's id for the refund
	return nil
}

// A handler run through the real processor: what happened to each record.
func Example() {
	t := &testing.T{} // in a test, the test's own t

	w := batchtest.NewWorker(t, batch.Config{Handler: handleRefund})
	res := w.Run(batchtest.Event(
		batchtest.Msg{ID: "ok", Body: `{"refund_id":"r-1","amount_cents":500}`},
		batchtest.Msg{ID: "torn", Body: `{"refund_id":`},
		batchtest.Msg{ID: "zero", Body: `{"refund_id":"r-2","amount_cents":0}`},
		batchtest.Msg{ID: "flaky", Body: `{"refund_id":"r-3","amount_cents":7,"flaky":true}`},
		batchtest.Msg{ID: "spent", Body: `{"refund_id":"r-4","amount_cents":7,"flaky":true}`, ReceiveCount: batchtest.MaxReceiveCount},
	))

	batchtest.RequireAcked(t, res, "ok")
	batchtest.RequireRetried(t, res, "flaky")
	batchtest.RequireDeadLettered(t, res, "torn", deadletter.ReasonJSONInvalid)
	batchtest.RequireDeadLettered(t, res, "zero", deadletter.ReasonSchemaInvalid)
	batchtest.RequireDeadLettered(t, res, "spent", deadletter.ReasonBudgetExhausted)
	batchtest.RequireBatchItemFailures(t, res, "flaky")

	for _, r := range res.Event.Records {
		fmt.Printf("%-5s %s\n", r.MessageId, res.Fate(r.MessageId))
	}
	// Output:
	// ok    acknowledged
	// torn  dead-lettered
	// zero  dead-lettered
	// flaky retried
	// spent dead-lettered
}

// A dead letter carries its reason, class and next action in dlq_meta, and
// the original body byte for byte.
func ExampleRequireDeadLettered() {
	t := &testing.T{}

	w := batchtest.NewWorker(t, batch.Config{Handler: handleRefund})
	res := w.Run(batchtest.Event(batchtest.Msg{
		Body:         `{"refund_id":"r-9","amount_cents":7,"flaky":true}`,
		ReceiveCount: 4,
		Attributes:   map[string]string{"tenant": "acme"},
	}))

	dl := batchtest.RequireDeadLettered(t, res, "m1", deadletter.ReasonBudgetExhausted)
	fmt.Println(dl.Meta.Class, dl.Meta.NextAction, dl.Meta.Attempts)
	fmt.Println(dl.Meta.Error)
	fmt.Println(dl.Body)
	fmt.Println(dl.Attributes["tenant"].StringValue)
	// Output:
	// transient retry 4
	// transient: payment API answered 503
	// {"refund_id":"r-9","amount_cents":7,"flaky":true}
	// acme
}

// A Worker keeps its ledger: the same event again is a redelivery, and a
// refund already done is acknowledged as a no-op, not paid twice.
func ExampleWorker_Run() {
	t := &testing.T{}

	w := batchtest.NewWorker(t, batch.Config{Handler: handleRefund})
	ev := batchtest.Bodies(`{"refund_id":"r-1","amount_cents":500}`)
	w.Run(ev)
	res := w.Run(ev) // SQS delivered it again

	batchtest.RequireAcked(t, res, "m1")
	e := batchtest.RequireLedgerState(t, w, w.Key("", "r-1"), ledger.StateDone)
	fmt.Println(e.Receipt)
	// Output:
	// pay-r-1
}

// When the DLQ refuses the letter, the record is retried: nothing is lost.
func ExampleDLQ() {
	t := &testing.T{}

	w := batchtest.NewWorker(t, batch.Config{Handler: handleRefund})
	w.DLQ.FailSends = errors.New("AWS.SimpleQueueService.NonExistentQueue")
	res := w.Run(batchtest.Bodies(`not json`))

	batchtest.RequireRetried(t, res, "m1")
	fmt.Println(res.Fate("m1"), len(res.DeadLetters))
	// Output:
	// retried 0
}

// A FIFO event: the first retried record of a group holds the rest of that
// group; other groups go on.
func ExampleEvent() {
	t := &testing.T{}

	w := batchtest.NewWorker(t, batch.Config{Handler: handleRefund, FIFO: true})
	res := w.Run(batchtest.Event(
		batchtest.Msg{ID: "a1", GroupID: "run-a", Body: `{"refund_id":"a1","amount_cents":1,"flaky":true}`},
		batchtest.Msg{ID: "a2", GroupID: "run-a", Body: `{"refund_id":"a2","amount_cents":1}`},
		batchtest.Msg{ID: "b1", GroupID: "run-b", Body: `{"refund_id":"b1","amount_cents":1}`},
	))

	batchtest.RequireBatchItemFailures(t, res, "a1", "a2")
	batchtest.RequireAcked(t, res, "b1")
	fmt.Println(res.Event.Records[0].EventSourceARN)
	// Output:
	// arn:aws:sqs:us-east-1:123456789012:agent-tasks.fifo
}
