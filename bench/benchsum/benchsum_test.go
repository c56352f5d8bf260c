package benchsum

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/functions/batch"
	"github.com/agentdlq/agentdlq/functions/sampleworker"
	"github.com/agentdlq/agentdlq/internal/sqsio"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/pipeline"
)

// TestSummarizeMixed runs the sample worker on the mixed fixture and checks
// the summary against the fixture's expected fates, with the ok digest
// computed here from encoding/json's view of each ok record's args.
func TestSummarizeMixed(t *testing.T) {
	raw, err := os.ReadFile("../../events/testdata/sqs-mixed.json")
	require.NoError(t, err)
	var ev events.SQSEvent
	require.NoError(t, json.Unmarshal(raw, &ev))

	p := &pipeline.Pipeline{Name: "bench", Owner: "local"}
	p.ApplyDefaults()
	p.MaxReceiveCount = 4 // expected.json's max_receive_count
	rec := &sqsio.Recorder{}
	w, err := sampleworker.New(sampleworker.Config{
		Pipeline: p, Queues: pipeline.Queues{HotURL: "local://hot", DLQURL: "local://dlq"},
		SQS: rec, Ledger: ledger.NewMemory(), WorkerVersion: "test",
		Logger: slog.New(batch.NewLogHandler(io.Discard, nil)), Metrics: io.Discard,
	})
	require.NoError(t, err)
	resp, err := w.Handle(context.Background(), ev)
	require.NoError(t, err)

	got, err := Summarize(resp, rec, func(yield func(string, []byte) bool) {
		for _, r := range ev.Records {
			if !yield(r.MessageId, []byte(r.Body)) {
				return
			}
		}
	})
	require.NoError(t, err)

	// What the fixture says, and the digest of its ok records.
	var expected struct {
		Fixtures []struct {
			File    string `json:"file"`
			Records []struct {
				MessageID string `json:"message_id"`
				Outcome   string `json:"outcome"`
				Reason    string `json:"reason"`
			} `json:"records"`
		} `json:"fixtures"`
	}
	raw, err = os.ReadFile("../../events/testdata/expected.json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &expected))
	bodies := map[string]string{}
	for _, r := range ev.Records {
		bodies[r.MessageId] = r.Body
	}
	want := Outcome{DeadLetters: map[string]int{}}
	digest := sha256.New()
	found := false
	for _, f := range expected.Fixtures {
		if f.File != "sqs-mixed.json" {
			continue
		}
		found = true
		for _, r := range f.Records {
			switch r.Outcome {
			case "ok":
				var task struct{ Args json.RawMessage }
				require.NoError(t, json.Unmarshal([]byte(bodies[r.MessageID]), &task))
				sum := sha256.Sum256(task.Args)
				fmt.Fprintf(digest, "%s:%s\n", r.MessageID, hex.EncodeToString(sum[:]))
			case "retry":
				want.Failures.Transient++
			case "dead_letter":
				want.DeadLetters[r.Reason]++
				if r.Reason == "budget_exhausted" || r.Reason == "dependency_open" || r.Reason == "auth_config" {
					want.Failures.Exhausted++ // dead-lettered on the last allowed receive
				} else {
					want.Failures.Poison++
				}
			}
		}
	}
	require.True(t, found, "sqs-mixed.json is not in expected.json")
	want.OKDigest = hex.EncodeToString(digest.Sum(nil))
	assert.Equal(t, want, got)
	assert.Positive(t, want.Failures.Poison+want.Failures.Transient+want.Failures.Exhausted)
}

// TestSummarizeUndecodableOK: a record reported as succeeded whose body is
// not a task is an error, not a digest over nothing.
func TestSummarizeUndecodableOK(t *testing.T) {
	_, err := Summarize(events.SQSEventResponse{}, &sqsio.Recorder{}, func(yield func(string, []byte) bool) {
		yield("m1", []byte(`{not json`))
	})
	require.ErrorContains(t, err, "record m1 succeeded but its body does not decode")
}
