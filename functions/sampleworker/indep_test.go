package sampleworker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/internal/sqsio"
	"github.com/agentdlq/agentdlq/testkit/localtest"
)

// TestIndependentEvents runs the events of the independent generator
// (scripts/peer-bench/gen.mjs, written from the contracts and not from
// events/gen: shuffled key orders, pretty-printed bodies, escapes in both
// layers, exponents, duplicate and escaped keys, 0-10 message attributes)
// through the worker on both paths, Handle (encoding/json into
// events.SQSEvent) and Invoke (the lean path), and requires of every
// record the outcome the generator says the contract gives it (ok, retry,
// or dead_letter with its reason, under maxReceiveCount 4): every record
// accounted for, ok + dead-lettered + retried = N, the same on both paths.
func TestIndependentEvents(t *testing.T) {
	t.Parallel()
	for _, mix := range [][3]int{{300, 40, 1}, {200, 90, 2}, {150, 10, 3}, {50, 100, 4}} {
		n, okPct, seed := mix[0], mix[1], mix[2]
		t.Run(fmt.Sprintf("n=%d,ok=%d,seed=%d", n, okPct, seed), func(t *testing.T) {
			t.Parallel()
			data, expect := localtest.PeerGen(t, n, okPct, seed)
			var ev events.SQSEvent
			require.NoError(t, json.Unmarshal(data, &ev), "encoding/json reads the event")
			require.Len(t, ev.Records, n)

			compat, lean := &sqsio.Recorder{}, &sqsio.Recorder{}
			resp, err := newTestWorker(t, false, 4, compat).Handle(context.Background(), ev)
			require.NoError(t, err)
			out, err := newTestWorker(t, false, 4, lean).Invoke(context.Background(), bytes.Clone(data))
			require.NoError(t, err, "the lean path takes what encoding/json takes")
			want, err := json.Marshal(resp)
			require.NoError(t, err)
			require.Equal(t, string(want), string(out), "the response, on both paths")
			require.Equal(t, compat.Sent(), lean.Sent(), "the dead letters, on both paths")

			got := make(map[string]string, n)
			for _, f := range resp.BatchItemFailures {
				got[f.ItemIdentifier] = "retry"
			}
			dls, err := lean.DeadLetters()
			require.NoError(t, err)
			for _, dl := range dls {
				require.NotContains(t, got, dl.MessageID, "a record both retried and dead-lettered")
				got[dl.MessageID] = "dead_letter:" + string(dl.Reason)
			}
			counts := map[string]int{}
			for _, r := range ev.Records {
				if _, failed := got[r.MessageId]; !failed {
					got[r.MessageId] = "ok"
				}
				counts[got[r.MessageId]]++
			}
			require.Len(t, got, n, "every record accounted for, once")
			ok, retried := counts["ok"], counts["retry"]
			require.Equal(t, n, ok+len(dls)+retried, "ok + dead-lettered + retried")
			for _, r := range ev.Records {
				if got[r.MessageId] != expect[r.MessageId] {
					t.Errorf("record %s: the worker gave %s, the contract %s\nbody: %.600q", r.MessageId, got[r.MessageId], expect[r.MessageId], r.Body)
				}
			}
			require.Equal(t, (n*okPct+50)/100, ok, "the generator's share of ok records")
			t.Logf("%d records: %d ok, %d retried, %d dead-lettered %v", n, ok, retried, len(dls), counts)
		})
	}
}

// TestLeanDeadLetterKeepsBinaryAttributes dead-letters a record whose Binary
// message attribute is followed, in a later record, by one written with
// "\/": the lean path must send the producer's bytes, as Handle does, and
// must not panic (see TestDecodeBinaryValueThenEscapedOne in
// functions/batch/internal/sqsevent).
func TestLeanDeadLetterKeepsBinaryAttributes(t *testing.T) {
	t.Parallel()
	for _, victim := range []string{"QUFBQUFBQUFBQUFBQUFBQUFB", "QUFB"} {
		ev := `{"Records":[` +
			`{"messageId":"m1","receiptHandle":"r1","body":"not json","attributes":{"ApproximateReceiveCount":"1","SentTimestamp":"1796047200000"},` +
			`"messageAttributes":{"sig":{"binaryValue":"` + victim + `","dataType":"Binary"},"tenant":{"stringValue":"acme","dataType":"String"}},"eventSource":"aws:sqs","eventSourceARN":"arn:aws:sqs:us-east-1:1:q"},` +
			`{"messageId":"m2","receiptHandle":"r2","body":"{}","attributes":{"ApproximateReceiveCount":"1","SentTimestamp":"1796047200000"},` +
			`"messageAttributes":{"blob":{"binaryValue":"yMnKy8zNzs\/Q0dLT1NXW19jZ2tvc3d7f4OHi4+Tl5ufo6err7O3u7\/Dx8vP09fb3","dataType":"Binary"}},"eventSource":"aws:sqs","eventSourceARN":"arn:aws:sqs:us-east-1:1:q"}]}`
		var sev events.SQSEvent
		require.NoError(t, json.Unmarshal([]byte(ev), &sev))
		compat, lean := &sqsio.Recorder{}, &sqsio.Recorder{}
		resp, err := newTestWorker(t, false, 4, compat).Handle(context.Background(), sev)
		require.NoError(t, err)
		require.Empty(t, resp.BatchItemFailures)
		require.NotPanics(t, func() {
			_, err = newTestWorker(t, false, 4, lean).Invoke(context.Background(), []byte(ev))
		})
		require.NoError(t, err)
		require.Len(t, compat.Sent(), 2)
		require.Equal(t, compat.Sent(), lean.Sent(), "the dead letters, on both paths")
	}
}
