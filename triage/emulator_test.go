package triage_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/testkit/localtest"
	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/eval"
	"github.com/agentdlq/agentdlq/triage/internal/triagetest"
	"github.com/agentdlq/agentdlq/triage/render"
	"github.com/agentdlq/agentdlq/triage/report"
	"github.com/agentdlq/agentdlq/triage/store"
)

// dlqContent is everything a redrive needs of a DLQ's messages: id, body and
// message attributes, in a comparable form.
func dlqContent(t *testing.T, client *sqs.Client, url string) []string {
	t.Helper()
	ctx := t.Context()
	var out []string
	var handles []types.ChangeMessageVisibilityBatchRequestEntry
	seen := map[string]bool{}
	for {
		got, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 20, WaitTimeSeconds: 1,
			MessageAttributeNames: []string{"All"},
		})
		require.NoError(t, err)
		if len(got.Messages) == 0 {
			break
		}
		for _, m := range got.Messages {
			id := aws.ToString(m.MessageId)
			if seen[id] {
				continue
			}
			seen[id] = true
			var attrs []string
			for name, a := range m.MessageAttributes {
				attrs = append(attrs, name+"="+aws.ToString(a.DataType)+":"+aws.ToString(a.StringValue))
			}
			sort.Strings(attrs)
			out = append(out, id+"|"+aws.ToString(m.Body)+"|"+strings.Join(attrs, ","))
			handles = append(handles, types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(fmt.Sprint(len(handles))), ReceiptHandle: m.ReceiptHandle})
		}
	}
	// Give them back at once (ten at a time), as triage does.
	for i := 0; i < len(handles); i += 10 {
		batch := handles[i:min(i+10, len(handles))]
		for j := range batch {
			batch[j].Id = aws.String(fmt.Sprint(j))
		}
		_, err := client.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url), Entries: batch})
		require.NoError(t, err)
	}
	sort.Strings(out)
	return out
}

func depth(t *testing.T, client *sqs.Client, url string) (visible, inFlight string) {
	t.Helper()
	out, err := client.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{"All"}})
	require.NoError(t, err)
	return out.Attributes["ApproximateNumberOfMessages"], out.Attributes["ApproximateNumberOfMessagesNotVisible"]
}

// TestEmulatorTriageLeavesDLQUnchanged seeds a local DLQ — worker dead
// letters (recurring and one-off poison), a message with unreadable
// metadata, and a genuine broker move through the redrive policy — triages
// it with an S3 export, and checks that the DLQ's content and count are
// exactly what they were.
func TestEmulatorTriageLeavesDLQUnchanged(t *testing.T) {
	t.Parallel()
	cfg := localtest.AWS(t)
	ctx := t.Context()
	p := triagetest.Pipeline(t, false)
	q := localtest.Queues(t, cfg, p)
	client := sqs.NewFromConfig(cfg)
	seeded := time.Now().UTC()

	send := func(body string, attrs map[string]deadletter.Attribute) {
		t.Helper()
		in := &sqs.SendMessageInput{QueueUrl: aws.String(q.DLQURL), MessageBody: aws.String(body), MessageAttributes: map[string]types.MessageAttributeValue{}}
		for name, a := range attrs {
			in.MessageAttributes[name] = types.MessageAttributeValue{DataType: aws.String(a.DataType), StringValue: aws.String(a.StringValue)}
		}
		_, err := client.SendMessage(ctx, in)
		require.NoError(t, err)
	}
	worker := func(body string, m deadletter.Meta) {
		t.Helper()
		m.DeadLetteredAt = seeded
		attrs, err := deadletter.EncodeDeadLetter(m, map[string]deadletter.Attribute{"origin": {DataType: "String", StringValue: "seed"}})
		require.NoError(t, err)
		send(body, attrs)
	}
	for i := range 4 { // recurring poison: one group of 4, three distinct inputs
		worker(triagetest.Task(fmt.Sprintf("s%d", i), "acme", "web.search", "1", fmt.Sprintf(`{"query":"x%d"}`, min(i, 2))),
			triagetest.PoisonMeta(deadletter.ReasonSchemaInvalid, "web.search", "1", "acme", fmt.Sprintf("key-s%d", i), fmt.Sprintf("args.q: required in task %d", i)))
	}
	worker(triagetest.Task("u1", "acme", "web.crawl", "1", `{}`), triagetest.PoisonMeta(deadletter.ReasonToolUnknown, "web.crawl", "1", "acme", "key-u1", "not in catalog"))
	send(triagetest.Task("x1", "acme", "sql.query", "1", `{}`), map[string]deadletter.Attribute{
		deadletter.AttrReason: {DataType: "String", StringValue: "schema_invalid"},
		deadletter.AttrMeta:   {DataType: "String", StringValue: `{"v":9}`},
	})
	send(triagetest.Task("raw", "globex", "code.exec", "1", `{}`), nil) // no metadata

	// A genuine broker move: receive the hot queue's message maxReceiveCount
	// times without deleting it; the next receive moves it to the DLQ.
	_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.HotURL), MessageBody: aws.String(triagetest.Task("crash", "globex", "code.exec", "1", `{"src":"oom"}`))})
	require.NoError(t, err)
	// (A receive's VisibilityTimeout of 0 is not sent by the SDK, so each
	// receive is released with ChangeMessageVisibility 0.)
	for i := range p.MaxReceiveCount + 1 {
		got, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.HotURL), WaitTimeSeconds: 1})
		require.NoError(t, err)
		if i == p.MaxReceiveCount {
			require.Empty(t, got.Messages, "moved to the DLQ instead of delivered")
			break
		}
		require.Len(t, got.Messages, 1, "receive %d", i+1)
		_, err = client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(q.HotURL), ReceiptHandle: got.Messages[0].ReceiptHandle, VisibilityTimeout: 0})
		require.NoError(t, err)
	}

	require.Eventually(t, func() bool { v, _ := depth(t, client, q.DLQURL); return v == "8" }, 10*time.Second, 200*time.Millisecond, "seeded 7 + 1 broker move")
	before := dlqContent(t, client, q.DLQURL)
	require.Len(t, before, 8)
	require.Eventually(t, func() bool { v, f := depth(t, client, q.DLQURL); return v == "8" && f == "0" }, 5*time.Second, 100*time.Millisecond)

	bucket := localtest.Bucket(t, cfg)
	dest, err := store.Parse("s3://"+bucket+"/evals", s3.NewFromConfig(cfg))
	require.NoError(t, err)
	clock := triagetest.NewClock()
	clock.Set(seeded.Add(time.Minute)) // frozen just after seeding
	run := func() *report.Report {
		t.Helper()
		r, err := triage.Run(ctx, triage.Config{Pipeline: p, DLQURL: q.DLQURL, SQS: client, Export: eval.To(dest), Keep: render.KeepIn(dest), Now: clock.Now, Logger: triagetest.Quiet,
			Scan: triage.ScanOptions{VisibilityTimeout: 30 * time.Second, Receivers: 2}})
		require.NoError(t, err)
		return r
	}
	r := run()
	assert.False(t, r.Partial, r.PartialReasons)
	counts := map[deadletter.Reason]int{}
	for _, rt := range r.Totals.ByReason {
		counts[rt.Reason] = rt.Count
	}
	assert.Equal(t, map[deadletter.Reason]int{
		deadletter.ReasonSchemaInvalid: 5, deadletter.ReasonToolUnknown: 1, deadletter.ReasonReceiveLimit: 2,
	}, counts)
	assert.Equal(t, 1, r.Totals.Unreadable)
	assert.Equal(t, 1, r.Totals.RecurringPoisonGroups)
	require.NotNil(t, r.Export)
	assert.Equal(t, 3, r.Export.Exported, "three distinct inputs in the recurring group")
	assert.Equal(t, 0, r.Expiry.ExpiringSoon)
	assert.Equal(t, 8, r.Scan.Unique)
	assert.Equal(t, 8, r.Scan.Released, "released early")

	// The DLQ holds exactly what it held: same ids, bodies, attributes and count.
	assert.Equal(t, before, dlqContent(t, client, q.DLQURL))
	require.Eventually(t, func() bool { v, f := depth(t, client, q.DLQURL); return v == "8" && f == "0" }, 5*time.Second, 100*time.Millisecond)

	// 300 hours later (the fake clock; retention 336 h) every dead letter is
	// within the 48 h warning window, soonest the broker move, whose clock
	// started when it was first sent to the hot queue.
	clock.Set(seeded.Add(300 * time.Hour))
	late := run()
	assert.Equal(t, 8, late.Expiry.ExpiringSoon)
	assert.Len(t, late.Expiry.Expiring, 8)
	assert.Equal(t, 2, late.Expiry.ByBasis[report.ClockOriginalSend], "the message sent without metadata and the broker move")
	assert.Equal(t, 6, late.Expiry.ByBasis[report.ClockWorkerSend])
	clock.Set(seeded.Add(time.Minute))

	// A second run sees everything again (the release worked) and exports nothing twice.
	r2 := run()
	assert.Equal(t, 8, r2.Totals.Messages)
	assert.Equal(t, 0, r2.Export.Exported)
	assert.Equal(t, 3, r2.Export.AlreadyExported)
	assert.Equal(t, before, dlqContent(t, client, q.DLQURL))
}

func TestEmulatorMissingDLQ(t *testing.T) {
	t.Parallel()
	cfg := localtest.AWS(t)
	client := sqs.NewFromConfig(cfg)
	url := strings.TrimSuffix(aws.ToString(cfg.BaseEndpoint), "/")
	if url == "" {
		url = "http://127.0.0.1"
	}
	_, _, err := triage.Scan(t.Context(), client, url+"/000000000000/"+localtest.Unique("no-such-dlq"), triage.ScanOptions{})
	require.ErrorIs(t, err, triage.ErrQueueNotFound)
}
