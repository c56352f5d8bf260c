package sizecost

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/local/esm"
	"github.com/agentdlq/agentdlq/local/workload"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/testkit/localtest"
)

// SQS bills a request per 64 KiB chunk of its payload.
func TestBilled(t *testing.T) {
	t.Parallel()
	for payload, want := range map[int]int{0: 1, 1: 1, 64 * 1024: 1, 64*1024 + 1: 2, 256 * 1024: 4, 1 << 20: 16, 1032192: 16} {
		assert.Equal(t, want, Billed(payload), "%d bytes", payload)
	}
}

// A send's payload is its bodies and attributes as SQS sizes them; a
// receive's, the messages it returned.
func TestPayload(t *testing.T) {
	t.Parallel()
	attrs := map[string]types.MessageAttributeValue{"dlq_reason": {DataType: aws.String("String"), StringValue: aws.String("tool_unknown")}}
	assert.Equal(t, 5+10+6+12, payload(&sqs.SendMessageInput{MessageBody: aws.String("hello"), MessageAttributes: attrs}, nil))
	assert.Equal(t, 2*(5+10+6+12), payload(&sqs.SendMessageBatchInput{Entries: []types.SendMessageBatchRequestEntry{
		{MessageBody: aws.String("hello"), MessageAttributes: attrs}, {MessageBody: aws.String("world"), MessageAttributes: attrs}}}, nil))
	assert.Equal(t, 3+4, payload(&sqs.ReceiveMessageInput{}, &sqs.ReceiveMessageOutput{Messages: []types.Message{{Body: aws.String("abc")}, {Body: aws.String("defg")}}}))
	assert.Equal(t, 0, payload(&sqs.DeleteMessageBatchInput{}, &sqs.DeleteMessageBatchOutput{}))
}

// Pad makes a body of exactly the size asked, still a task of its kind.
func TestPad(t *testing.T) {
	t.Parallel()
	for _, k := range []workload.Kind{workload.OK, workload.GuardrailReject} {
		body, err := Pad(workload.Make("p", 1, k, 0).Body, 100_000)
		require.NoError(t, err)
		assert.Len(t, body, 100_000)
		assert.True(t, json.Valid([]byte(body)))
		got, ok := workload.KindOf(body)
		assert.True(t, ok)
		assert.Equal(t, k, got)
	}
	_, err := Pad("not json", 100)
	require.Error(t, err)
}

// TestMeasureLargeTasks sends tasks of 1 KiB up to the hot queue's
// maximum through the real worker on the emulators, processed and
// dead-lettered, and checks what the counts must be whatever the timing:
// a send is billed a request per 64 KiB of its body, every task is
// received and settled, and a dead letter carries its whole body again.
// With -v it prints the table of docs/worker.md ("Large tasks and claim
// checks"); SIZECOST_JSON=path writes the results as JSON.
func TestMeasureLargeTasks(t *testing.T) {
	cfg := localtest.AWS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	table := localtest.Table(t, cfg)
	sizes := []int{1 << 10, 16 << 10, 64 << 10, 256 << 10, 512 << 10, pipeline.DefaultMaxMessageBytes}
	var results []Result
	for _, kind := range []workload.Kind{workload.OK, workload.GuardrailReject} {
		for _, size := range sizes {
			p := &pipeline.Pipeline{Name: "sizecost", Owner: "o", MaxReceiveCount: 3}
			p.ApplyDefaults()
			q := localtest.Queues(t, cfg, p)
			r, err := Measure(ctx, Config{AWS: cfg, Pipeline: p, Queues: q, Table: table, BodyBytes: size, Tasks: 10, Kind: kind})
			require.NoError(t, err, "%s of %d bytes", kind, size)
			results = append(results, r)

			send := r.Producer["SendMessage"]
			assert.Equal(t, r.Tasks, send.Calls)
			assert.Equal(t, r.Tasks*size, send.PayloadBytes, "the bodies as sent")
			assert.Equal(t, r.Tasks*Billed(size), send.Billed, "a request per 64 KiB chunk of each send")
			assert.Equal(t, r.Tasks, r.Deleted, "every task settled on its first receive")
			recv := r.Mapping["ReceiveMessage"]
			assert.GreaterOrEqual(t, recv.PayloadBytes, r.Tasks*size, "every body received at least once")
			assert.GreaterOrEqual(t, recv.Billed, Billed(r.Tasks*size)/max(1, recv.Calls), "receives are billed by their payload too")
			dl := r.Worker["SendMessageBatch"]
			if kind == workload.OK {
				assert.Zero(t, dl.Calls, "no dead letter of a valid task")
				continue
			}
			// A dead letter is its body again, byte for byte, plus
			// dlq_reason and dlq_meta: at least the body, within the reserve.
			assert.GreaterOrEqual(t, dl.PayloadBytes, r.Tasks*size)
			assert.LessOrEqual(t, dl.PayloadBytes, r.Tasks*(size+16*1024))
			assert.GreaterOrEqual(t, dl.Billed, r.Tasks*Billed(size)/10, "batched dead letters are billed by their payload")
			dlq, err := esm.Depth(ctx, sqs.NewFromConfig(cfg), q.DLQURL)
			require.NoError(t, err)
			assert.Equal(t, r.Tasks, dlq, "every poison task in the DLQ")
		}
	}
	var b bytes.Buffer
	Table(&b, results)
	t.Logf("measured %s with go test ./bench/sizecost -run MeasureLargeTasks -v (emulators):\n%s", time.Now().UTC().Format(time.DateOnly), b.String())
	if path := os.Getenv("SIZECOST_JSON"); path != "" {
		js, err := json.MarshalIndent(results, "", "  ")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, js, 0o644))
	}
	assert.True(t, strings.Contains(b.String(), "| 1 KiB |"), b.String())
}
