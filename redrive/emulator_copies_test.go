package redrive

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/triage"
)

// sendDeadLetter sends d to the DLQ as the worker does, in a
// SendMessageBatch, and returns its message id.
func (l *local) sendDeadLetter(d deadLetter) string {
	l.t.Helper()
	out, err := l.client.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(l.q.DLQURL),
		Entries: []sqstypes.SendMessageBatchRequestEntry{{Id: aws.String("0"), MessageBody: aws.String(d.body), MessageAttributes: attributesToSQS(d.attrs)}}})
	require.NoError(l.t, err)
	require.Len(l.t, out.Successful, 1)
	return aws.ToString(out.Successful[0].MessageId)
}

// A dead-letter send whose response was lost after SQS took it is sent
// again: the DLQ holds two copies of one dead letter. Triage counts it
// once; a select moves it once and deletes the other copy, and leaves a
// near-copy (the same original message, another body, another reason).
func TestEmulatorCopiesCountedAndMovedOnce(t *testing.T) {
	t.Parallel()
	l := newLocal(t, "agent-tasks")
	ctx := context.Background()

	d := newDeadLetter(t, "copy-1", "web.search", deadletter.ReasonDependencyOpen, 3, "")
	first := l.sendDeadLetter(d)
	second := l.sendDeadLetter(d) // the worker's retry: the same body and attributes
	var body map[string]any
	require.NoError(t, json.Unmarshal([]byte(d.body), &body))
	body["args"] = map[string]any{"q": "hello copy-1, edited"}
	nb, _ := json.Marshal(body)
	nearAttrs, err := deadletter.EncodeDeadLetter(deadletter.Meta{Reason: deadletter.ReasonSchemaInvalid, Attempts: 1, Error: "args.q: too long",
		MessageID: d.origID, IdempotencyKey: d.key, Tool: "web.search", ToolVersion: "1", Tenant: "acme", SchemaVersion: 1,
		DeadLetteredAt: time.Date(2026, 11, 29, 11, 0, 0, 0, time.UTC)}, d.original)
	require.NoError(t, err)
	near := l.sendDeadLetter(deadLetter{body: string(nb), attrs: nearAttrs})

	rep, err := triage.Run(ctx, triage.Config{Pipeline: l.p, DLQURL: l.q.DLQURL, SQS: l.client, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	require.NoError(t, err)
	assert.Equal(t, 3, rep.Scan.Unique, "the scan sees three letters")
	assert.Equal(t, 2, rep.Totals.Messages, "the pair counts once, the near-copy separately")
	assert.Equal(t, 1, rep.Totals.Copies)
	assert.Zero(t, rep.Totals.CopiesDiffering)
	counts := map[deadletter.Reason]int{}
	for _, g := range rep.Groups {
		counts[g.Reason] += g.Count
	}
	assert.Equal(t, map[deadletter.Reason]int{deadletter.ReasonDependencyOpen: 1, deadletter.ReasonSchemaInvalid: 1}, counts)
	require.Len(t, rep.Copies, 1)
	set := rep.Copies[0]
	assert.Equal(t, d.origID, set.OriginalMessageID)
	assert.ElementsMatch(t, []string{first, second}, append([]string{set.MessageID}, set.CopyMessageIDs...))

	res, err := l.redriver().Select(ctx, SelectRequest{Who: Who{Owner: l.p.Owner, Why: "search API back up"},
		Reasons: []deadletter.Reason{deadletter.ReasonDependencyOpen}, Rate: 50})
	require.NoError(t, err)
	assert.Equal(t, 1, res.Moved)
	assert.Equal(t, 1, res.CopiesDeleted)

	hot := l.drainQueue(l.q.HotURL)
	require.Len(t, hot, 1, "the hot queue receives the dead letter once")
	assert.Equal(t, d.body, aws.ToString(hot[0].Body))
	left := l.drainQueueKeep(l.q.DLQURL)
	require.Len(t, left, 1, "the DLQ keeps the near-copy only")
	assert.Equal(t, near, aws.ToString(left[0].MessageId))

	require.Len(t, res.Copies, 1)
	moved, deleted := res.Copies[0].DLQMessageID, res.Copies[0].Deleted
	require.Len(t, deleted, 1)
	assert.ElementsMatch(t, []string{first, second}, []string{moved, deleted[0]})
	var rec *audit.Entry
	for _, e := range l.store.all() {
		if e.Action == audit.ActionSelect && e.Outcome == audit.OutcomeOK {
			rec = &e
		}
	}
	require.NotNil(t, rec, "the select's audit record")
	assert.Equal(t, 1, rec.Counts["copies_deleted"])
	assert.Equal(t, moved+" (original "+d.origID+"): deleted "+deleted[0], rec.Detail["copies_deleted"])
}
