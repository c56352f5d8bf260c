package batch

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/ledger"
)

// logCount counts the log lines whose msg is msg.
func logCount(logs, msg string) int {
	return strings.Count(logs, `"msg":"`+msg+`"`)
}

// Dead letters go to the DLQ ten a SendMessageBatch call, in event order;
// the ok records between them are acknowledged as ever.
func TestDeadLettersAreSentTenABatch(t *testing.T) {
	t.Parallel()
	for _, concurrency := range []int{1, 3} {
		t.Run(fmt.Sprintf("concurrency=%d", concurrency), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, func(c *Config) { c.Concurrency = concurrency })
			var recs []events.SQSMessage
			want := map[string]outcome{}
			for i := range 30 {
				id := fmt.Sprintf("m%02d", i)
				if i%6 == 5 {
					recs = append(recs, sqsMsg(id, "ok", 1))
					want[id] = acked
					continue
				}
				recs = append(recs, sqsMsg(id, "begin-fail:k"+id, 1))
				want[id] = deadLettered(deadletter.ReasonUnclassified)
			}
			got := h.run(t, events.SQSEvent{Records: recs})
			assert.Equal(t, want, got)
			total := 0
			for _, n := range h.sqs.batches {
				assert.LessOrEqual(t, n, 10)
				total += n
			}
			assert.Equal(t, 25, total)
			if concurrency == 1 {
				assert.Equal(t, []int{10, 10, 5}, h.sqs.batches)
			}
			for id, o := range want {
				if o == acked {
					continue
				}
				e, ok, err := h.ledger.Get(context.Background(), lkey("k"+id))
				require.NoError(t, err)
				require.True(t, ok)
				assert.Equal(t, ledger.StateDeadLettered, e.State, id)
			}
			m := parseEMF(t, h.metrics.String())
			assert.Equal(t, 25.0, m[0]["DeadLettered"])
			assert.Equal(t, 5.0, m[0]["Processed"])
			assert.Equal(t, 0.0, m[0]["DLQSendFailures"])
			assert.Equal(t, 25, logCount(h.logs.String(), "dead-lettered"))
		})
	}
}

// An entry that SendMessageBatch reports as failed, or does not report at
// all, leaves only its own record to be retried (a batch item failure,
// counted in DLQSendFailures, its ledger lease released); the other entries
// of the call are dead-lettered.
func TestBatchSendPartialFailure(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	bad := func(e types.SendMessageBatchRequestEntry, suffix ...string) bool {
		for _, s := range suffix {
			if strings.HasSuffix(aws.ToString(e.MessageBody), ":"+s) {
				return true
			}
		}
		return false
	}
	h.sqs.reject = func(e types.SendMessageBatchRequestEntry) bool { return bad(e, "k03", "k07", "k12") }
	h.sqs.forget = func(e types.SendMessageBatchRequestEntry) bool { return bad(e, "k10") }
	var recs []events.SQSMessage
	want := map[string]outcome{}
	for i := range 14 {
		id := fmt.Sprintf("m%02d", i)
		recs = append(recs, sqsMsg(id, fmt.Sprintf("begin-fail:k%02d", i), 1))
		want[id] = deadLettered(deadletter.ReasonUnclassified)
	}
	for _, id := range []string{"m03", "m07", "m10", "m12"} {
		want[id] = retried
	}
	got := h.run(t, events.SQSEvent{Records: recs})
	assert.Equal(t, want, got)
	assert.Equal(t, []int{10, 4}, h.sqs.batches)

	m := parseEMF(t, h.metrics.String())
	assert.Equal(t, 10.0, m[0]["DeadLettered"])
	assert.Equal(t, 4.0, m[0]["DLQSendFailures"])
	assert.Equal(t, 4.0, m[0]["Retried"])
	logs := h.logs.String()
	assert.Equal(t, 10, logCount(logs, "dead-lettered"))
	assert.Equal(t, 4, logCount(logs, "dead-letter send failed; retried"))
	assert.Contains(t, logs, "InvalidMessageContents")
	assert.Contains(t, logs, "reported neither success nor failure")
	for i := range 14 {
		e, ok, err := h.ledger.Get(context.Background(), lkey(fmt.Sprintf("k%02d", i)))
		require.NoError(t, err)
		require.True(t, ok)
		if want[fmt.Sprintf("m%02d", i)] == retried {
			assert.Equal(t, ledger.StateInProgress, e.State)
			assert.True(t, e.LeaseUntil.IsZero() || !e.LeaseUntil.After(testNow), "the lease is released")
		} else {
			assert.Equal(t, ledger.StateDeadLettered, e.State)
		}
	}

	// Redelivered, the retried ones are dead-lettered once the DLQ takes them.
	h.sqs.reject, h.sqs.forget = nil, nil
	var again []events.SQSMessage
	for _, id := range []string{"m03", "m07", "m10", "m12"} {
		for _, r := range recs {
			if r.MessageId == id {
				r.Attributes = map[string]string{"ApproximateReceiveCount": "2"}
				again = append(again, r)
			}
		}
	}
	got = h.run(t, events.SQSEvent{Records: again})
	for _, id := range []string{"m03", "m07", "m10", "m12"} {
		assert.Equal(t, deadLettered(deadletter.ReasonUnclassified), got[id])
	}
}

// A SendMessageBatch carries at most 256 KiB of messages (1 MiB when the
// DLQ takes messages above 256 KiB): large dead letters go in more calls.
func TestBatchSendRespectsTheBatchSize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		maxMessage, body, limit int
		batches                 []int
	}{
		{maxMessage: 256 << 10, body: 100 << 10, limit: 256 << 10, batches: []int{2, 2, 2, 1}},
		{maxMessage: 0, body: 300 << 10, limit: 1 << 20, batches: []int{3, 3, 1}}, // the default: 1 MiB
		{maxMessage: 256 << 10, body: 20 << 10, limit: 256 << 10, batches: []int{7}},
	} {
		t.Run(fmt.Sprintf("max=%d,body=%d", tc.maxMessage, tc.body), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, func(c *Config) { c.MaxMessageBytes = tc.maxMessage })
			var recs []events.SQSMessage
			want := map[string]outcome{}
			for i := range 7 {
				id := fmt.Sprintf("m%d", i)
				msg := sqsMsg(id, "poison:"+strings.Repeat("x", tc.body), 1)
				for k := range 10 { // two folded into dlq_meta
					msg.MessageAttributes[fmt.Sprintf("a%d", k)] = events.SQSMessageAttribute{DataType: "String", StringValue: aws.String(id)}
				}
				recs = append(recs, msg)
				want[id] = deadLettered(deadletter.ReasonSchemaInvalid)
			}
			assert.Equal(t, want, h.run(t, events.SQSEvent{Records: recs}))
			assert.Equal(t, tc.batches, h.sqs.batches)
			for _, n := range h.sqs.batchBytes {
				assert.LessOrEqual(t, n, tc.limit)
			}
			require.Len(t, h.sqs.sent, 7)
			for _, in := range h.sqs.sent {
				attrs := map[string]deadletter.Attribute{}
				for name, v := range in.MessageAttributes {
					attrs[name] = deadletter.Attribute{DataType: aws.ToString(v.DataType), StringValue: aws.ToString(v.StringValue)}
				}
				meta, original, err := deadletter.DecodeDeadLetter(attrs)
				require.NoError(t, err)
				assert.Len(t, original, 11, "every original attribute, kept or folded")
				for name, a := range original {
					if name != "tenant" {
						assert.Equal(t, meta.MessageID, a.StringValue, "each dead letter its own attributes")
					}
				}
			}
		})
	}
}

// The common dead letter (no attribute folded, nothing reduced) is written
// without deadletter.FitDeadLetter's maps; its attributes are the ones
// FitDeadLetter gives, byte for byte, for every kind of attribute.
func TestDeadLetterAttributesAreFitDeadLetters(t *testing.T) {
	t.Parallel()
	kinds := []events.SQSMessageAttribute{
		{DataType: "String", StringValue: aws.String("acme")},
		{DataType: "Number", StringValue: aws.String("-1.5e3")},
		{DataType: "Binary", BinaryValue: []byte{0, 0xff, '"'}},
		{DataType: "String.trace", StringValue: aws.String("naïve “q” \u2028 \x7f")},
		{DataType: "Binary.gzip", BinaryValue: []byte("\x1f\x8b")},
		{DataType: "String"}, // no value at all
	}
	for n := 0; n <= deadletter.MaxKeptAttributes+2; n++ {
		for _, reserved := range []bool{false, true} {
			if reserved && n == 0 {
				continue
			}
			t.Run(fmt.Sprintf("%d,reserved=%v", n, reserved), func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, nil)
				msg := sqsMsg("m1", "poison", 1)
				msg.MessageAttributes = map[string]events.SQSMessageAttribute{}
				for i := range n {
					name := fmt.Sprintf("a%d", i)
					if reserved && i == 0 {
						name = "dlq_reason" // a producer's own: folded, never kept
					}
					msg.MessageAttributes[name] = kinds[i%len(kinds)]
				}
				require.Equal(t, deadLettered(deadletter.ReasonSchemaInvalid), h.run(t, events.SQSEvent{Records: []events.SQSMessage{msg}})["m1"])
				require.Len(t, h.sqs.sent, 1)
				got := map[string]deadletter.Attribute{}
				for name, v := range h.sqs.sent[0].MessageAttributes {
					a := deadletter.Attribute{DataType: aws.ToString(v.DataType), BinaryValue: v.BinaryValue}
					if v.StringValue != nil {
						a.StringValue = *v.StringValue
					}
					got[name] = a
				}
				meta, err := deadletter.ParseMeta([]byte(got[deadletter.AttrMeta].StringValue))
				require.NoError(t, err)
				payload, err := json.Marshal(events.SQSEvent{Records: []events.SQSMessage{msg}})
				require.NoError(t, err)
				lean, err := DecodeEvent(payload)
				require.NoError(t, err)
				original := attributeMap(lean.ev.Records[0].AppendDeadLetterAttrs(nil))
				want, ev, err := deadletter.FitDeadLetter(*meta, original, len(msg.Body), DefaultMaxMessageBytes, "")
				require.NoError(t, err)
				require.Nil(t, ev)
				for name, a := range want {
					if strings.HasPrefix(a.DataType, "Binary") {
						a.StringValue = ""
					}
					want[name] = a
				}
				assert.Equal(t, want, got)
			})
		}
	}
}
