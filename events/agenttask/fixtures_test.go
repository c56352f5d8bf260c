package agenttask_test

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/agenttask"
	"github.com/agentdlq/agentdlq/events/deadletter"
)

// expectedFile mirrors events/testdata/expected.json (written by events/gen).
type expectedFile struct {
	MaxReceiveCount int    `json:"max_receive_count"`
	Conventions     string `json:"conventions"`
	Fixtures        []struct {
		File        string `json:"file"`
		Scenario    string `json:"scenario"`
		Description string `json:"description"`
		FIFO        bool   `json:"fifo"`
		EventError  bool   `json:"event_error"`
		Records     []struct {
			MessageID string            `json:"message_id"`
			Outcome   string            `json:"outcome"`
			Reason    deadletter.Reason `json:"reason"`
			Why       string            `json:"why"`
		} `json:"records"`
	} `json:"fixtures"`
}

func loadExpected(t *testing.T) expectedFile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "expected.json"))
	require.NoError(t, err)
	var exp expectedFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&exp))
	return exp
}

// TestFixturesAreLambdaSQSEvents decodes every fixture as aws-lambda-go's
// SQSEvent and checks that expected.json covers each of its records, in
// order, with an outcome the conventions allow.
func TestFixturesAreLambdaSQSEvents(t *testing.T) {
	t.Parallel()
	exp := loadExpected(t)
	assert.Equal(t, 4, exp.MaxReceiveCount)
	files, err := filepath.Glob(filepath.Join("..", "testdata", "sqs-*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	byFile := map[string]int{}
	for i, f := range exp.Fixtures {
		byFile[f.File] = i
	}
	assert.Len(t, exp.Fixtures, len(files), "expected.json lists every fixture once")
	seen := map[string]string{} // message id -> file
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			i, ok := byFile[name]
			require.True(t, ok, "expected.json has no entry for %s", name)
			fx := exp.Fixtures[i]
			assert.Equal(t, "sqs-"+fx.Scenario+".json", name)
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			var ev events.SQSEvent
			require.NoError(t, json.Unmarshal(data, &ev))
			if fx.EventError {
				require.NotEmpty(t, ev.Records)
				for _, r := range ev.Records {
					assert.NotEqual(t, "aws:sqs", r.EventSource, "an event_error fixture is not an SQS event")
				}
				assert.Empty(t, fx.Records)
				return
			}
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.DisallowUnknownFields()
			require.NoError(t, dec.Decode(&events.SQSEvent{}), "only fields of the Lambda SQS event shape")
			require.Len(t, fx.Records, len(ev.Records), "one expectation per record")
			for k, r := range ev.Records {
				want := fx.Records[k]
				assert.Equal(t, want.MessageID, r.MessageId, "record %d", k)
				if other, dup := seen[r.MessageId]; dup {
					t.Errorf("message id %s is in %s too", r.MessageId, other)
				}
				seen[r.MessageId] = name
				assert.Equal(t, "aws:sqs", r.EventSource)
				assert.Equal(t, "us-east-1", r.AWSRegion)
				assert.True(t, strings.HasPrefix(r.EventSourceARN, "arn:aws:sqs:us-east-1:"), r.EventSourceARN)
				assert.Equal(t, fx.FIFO, strings.HasSuffix(r.EventSourceARN, ".fifo"))
				assert.NotEmpty(t, r.ReceiptHandle)
				sum := md5.Sum([]byte(r.Body))
				assert.Equal(t, hex.EncodeToString(sum[:]), r.Md5OfBody, "md5OfBody of record %d", k)
				assert.LessOrEqual(t, len(r.MessageAttributes), deadletter.MaxAttributes)
				for n, a := range r.MessageAttributes {
					assert.False(t, strings.HasPrefix(n, "AWS.") || strings.HasPrefix(n, "Amazon."), n)
					assert.False(t, strings.HasPrefix(n, deadletter.AttrPrefix), "a fixture message carries no dlq_ attribute: %s", n)
					assert.True(t, (a.StringValue != nil) != (a.BinaryValue != nil), "attribute %s has one value", n)
				}
				if fx.FIFO {
					assert.NotEmpty(t, r.Attributes["MessageGroupId"])
					assert.NotEmpty(t, r.Attributes["SequenceNumber"])
				}
				checkExpectation(t, fx.Scenario, k, r, want.Outcome, want.Reason, exp.MaxReceiveCount)
				assert.NotEmpty(t, want.Why)
			}
		})
	}
}

// checkExpectation holds one record's expected outcome against the
// contracts: poison reasons come from DecodeTask, the others from the
// args.fault conventions of doc.go.
func checkExpectation(t *testing.T, sc string, k int, r events.SQSMessage, outcome string, reason deadletter.Reason, maxReceive int) {
	t.Helper()
	task, err := agenttask.DecodeTask([]byte(r.Body), sampleCatalog())
	if err != nil {
		ve, ok := agenttask.AsValidationError(err)
		require.True(t, ok)
		assert.Equal(t, "dead_letter", outcome, "record %d: poison is dead-lettered at once", k)
		assert.Equal(t, ve.Reason, reason, "record %d: the reason DecodeTask names", k)
		return
	}
	switch outcome {
	case "ok", "retry":
		assert.Empty(t, reason, "record %d", k)
	case "dead_letter":
		require.True(t, reason.Valid(), "record %d: reason %q", k, reason)
		assert.NotEqual(t, deadletter.ClassPoison, reason.Class(), "record %d: a valid task is not poison", k)
	default:
		t.Errorf("record %d: outcome %q", k, outcome)
	}
	var args struct {
		Fault json.RawMessage `json:"fault"`
	}
	require.NoError(t, json.Unmarshal(task.Args, &args))
	if len(args.Fault) == 0 {
		switch {
		case sc == "fifo-group": // a FIFO record after its group's failure is retried unprocessed
		case sc == "key-reused" && k > 0: // the key of an earlier record, with other args
			assert.Equal(t, deadletter.ReasonIdempotencyKeyReused, reason, "record %d: a reused key", k)
		default:
			assert.Equal(t, "ok", outcome, "record %d: a valid task without a fault", k)
		}
		return
	}
	var f struct {
		Retryable    bool   `json:"retryable"`
		Status       int    `json:"status"`
		UntilReceive int    `json:"until_receive"`
		Kind         string `json:"kind"`
		Code         string `json:"code"`
	}
	require.NoError(t, json.Unmarshal(args.Fault, &f))
	n, _ := strconv.Atoi(r.Attributes["ApproximateReceiveCount"])
	budget := func(last deadletter.Reason) (string, deadletter.Reason) {
		if n >= maxReceive {
			return "dead_letter", last
		}
		return "retry", ""
	}
	var wantOutcome string
	var wantReason deadletter.Reason
	switch {
	case f.Retryable:
		assert.Contains(t, []int{429, 503}, f.Status)
		if f.UntilReceive > 0 && n >= f.UntilReceive {
			wantOutcome = "ok"
		} else {
			wantOutcome, wantReason = budget(deadletter.ReasonBudgetExhausted)
		}
	case f.Kind == "timeout_after_effect" && sampleCatalog()[task.Tool].Mutates:
		wantOutcome, wantReason = "dead_letter", deadletter.ReasonEffectUnknown
	case f.Kind == "timeout_after_effect":
		wantOutcome, wantReason = budget(deadletter.ReasonBudgetExhausted)
	case f.Kind == "auth":
		assert.NotEmpty(t, f.Code)
		wantOutcome, wantReason = budget(deadletter.ReasonAuthConfig)
	case f.Kind == "dependency_open":
		wantOutcome, wantReason = budget(deadletter.ReasonDependencyOpen)
	case f.Kind == "policy_limit", f.Kind == "signature_invalid", f.Kind == "guardrail_reject":
		wantOutcome, wantReason = "dead_letter", deadletter.Reason(f.Kind)
	case f.Kind == "panic", f.Kind == "error":
		wantOutcome, wantReason = "dead_letter", deadletter.ReasonUnclassified
	default:
		t.Fatalf("record %d: fault %s follows no convention", k, args.Fault)
	}
	assert.Equal(t, wantOutcome, outcome, "record %d", k)
	assert.Equal(t, wantReason, reason, "record %d", k)
}

// TestFixtureScenarios checks what each scenario is for.
func TestFixtureScenarios(t *testing.T) {
	t.Parallel()
	read := func(name string) events.SQSEvent {
		data, err := os.ReadFile(filepath.Join("..", "testdata", "sqs-"+name+".json"))
		require.NoError(t, err)
		var ev events.SQSEvent
		require.NoError(t, json.Unmarshal(data, &ev))
		return ev
	}
	t.Run("valid bodies are about 1 KB", func(t *testing.T) {
		for _, r := range read("valid").Records {
			assert.InDelta(t, 1024, len(r.Body), 150)
		}
	})
	t.Run("large batch has 100 records", func(t *testing.T) {
		assert.Len(t, read("large-batch").Records, 100)
	})
	t.Run("empty records", func(t *testing.T) {
		ev := read("empty-records")
		assert.NotNil(t, ev.Records)
		assert.Empty(t, ev.Records)
	})
	t.Run("ten attributes", func(t *testing.T) {
		for _, r := range read("attributes-10").Records {
			assert.Len(t, r.MessageAttributes, 10)
			assert.Equal(t, "String.trace", r.MessageAttributes["trace"].DataType)
			assert.Equal(t, "Binary", r.MessageAttributes["signature"].DataType)
		}
	})
	t.Run("duplicate key", func(t *testing.T) {
		rs := read("duplicate-key").Records
		require.Len(t, rs, 2)
		a, err := agenttask.DecodeTask([]byte(rs[0].Body), nil)
		require.NoError(t, err)
		b, err := agenttask.DecodeTask([]byte(rs[1].Body), nil)
		require.NoError(t, err)
		assert.Equal(t, a.IdempotencyKey, b.IdempotencyKey)
		assert.NotEqual(t, rs[0].MessageId, rs[1].MessageId)
	})
	t.Run("fifo has two groups", func(t *testing.T) {
		groups := map[string]int{}
		for _, r := range read("fifo-group").Records {
			groups[r.Attributes["MessageGroupId"]]++
		}
		assert.Len(t, groups, 2)
	})
	t.Run("record without attributes", func(t *testing.T) {
		rs := read("record-without-attributes").Records
		assert.Nil(t, rs[0].Attributes)
		assert.Empty(t, rs[1].Attributes)
	})
	t.Run("receive count not a number", func(t *testing.T) {
		for _, r := range read("receive-count-not-a-number").Records {
			_, err := strconv.Atoi(r.Attributes["ApproximateReceiveCount"])
			assert.Error(t, err)
		}
	})
	t.Run("every reason the worker writes has a fixture", func(t *testing.T) {
		exp := loadExpected(t)
		got := map[deadletter.Reason]bool{}
		outcomes := map[string]bool{}
		for _, f := range exp.Fixtures {
			for _, r := range f.Records {
				got[r.Reason] = true
				outcomes[r.Outcome] = true
			}
		}
		for _, info := range deadletter.Taxonomy() {
			if info.Inferred || info.Reason == deadletter.ReasonRedriveLoop {
				continue // triage infers it; the ledger needs redrive history
			}
			assert.True(t, got[info.Reason], "no fixture dead-letters %s", info.Reason)
		}
		assert.Equal(t, map[string]bool{"ok": true, "retry": true, "dead_letter": true}, outcomes)
	})
}

// TestFixtureBodiesMalformed breaks every fixture body the ways a producer
// or a transport does — truncated, cut at each structural byte, wrapped in
// an array, with a stray byte — and checks that both decoders call it
// json_invalid, never a panic or a valid task.
func TestFixtureBodiesMalformed(t *testing.T) {
	t.Parallel()
	for i, body := range fixtureBodies(t) {
		if _, err := agenttask.DecodeTaskStd([]byte(body), nil); err != nil {
			if ve, _ := agenttask.AsValidationError(err); ve.Reason == deadletter.ReasonJSONInvalid {
				continue // already malformed
			}
		}
		broken := []string{body[:len(body)/2], body[:len(body)-1], body + "}", "[" + body + "]", "\x00" + body, strings.Replace(body, ":", "", 1)}
		for k := 0; k < len(body); k++ {
			if c := body[k]; c == '{' || c == '}' || c == ',' || c == '"' {
				broken = append(broken, body[:k])
			}
		}
		for _, b := range broken {
			for _, d := range decoders {
				_, err := d.fn([]byte(b), sampleCatalog())
				ve, ok := agenttask.AsValidationError(err)
				if !ok || ve.Reason != deadletter.ReasonJSONInvalid {
					t.Errorf("%s: body %d broken as %.60q...: %v", d.name, i, b, err)
				}
			}
		}
	}
}

// sampleVersions is the range of tool_version the sample tools support.
const sampleVersions = ">=1.0.0 <4.0.0"

// sampleCatalog is the sample worker's tools (functions/sampleworker's
// Catalog, without its verifiers), written out: the fixtures name them, and
// agenttask's tests import nothing of the worker.
func sampleCatalog() agenttask.Catalog {
	c := agenttask.Catalog{}
	for _, t := range []agenttask.Tool{
		{Name: "web.search", Versions: sampleVersions},
		{Name: "http.fetch", Versions: sampleVersions},
		{Name: "code.exec", Versions: sampleVersions},
		{Name: "file.read", Versions: sampleVersions},
		{Name: "file.write", Versions: sampleVersions, Mutates: true},
		{Name: "sql.query", Versions: sampleVersions},
		{Name: "vector.search", Versions: sampleVersions},
		{Name: "email.send", Versions: sampleVersions, Mutates: true},
	} {
		c[t.Name] = t
	}
	return c
}
