package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func invokeCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func TestInvokeMixed(t *testing.T) {
	t.Parallel()
	out, err := invokeCLI(t, "invoke", "--event", "../../events/testdata/sqs-mixed.json")
	require.NoError(t, err)
	var got struct {
		BatchItemFailures []struct {
			ItemIdentifier string `json:"itemIdentifier"`
		} `json:"batchItemFailures"`
		DeadLetters []struct {
			MessageID string         `json:"messageId"`
			Reason    string         `json:"reason"`
			Meta      map[string]any `json:"meta"`
		} `json:"deadLetters"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.Len(t, got.BatchItemFailures, 2)
	require.Len(t, got.DeadLetters, 11)
	for _, dl := range got.DeadLetters {
		assert.NotEmpty(t, dl.MessageID)
		assert.Equal(t, dl.Reason, dl.Meta["reason"], "meta is the dlq_meta document")
		assert.Equal(t, dl.MessageID, dl.Meta["message_id"])
	}
}

func TestInvokeEmptyFailuresIsAnArray(t *testing.T) {
	t.Parallel()
	out, err := invokeCLI(t, "invoke", "--event", "../../events/testdata/sqs-valid.json")
	require.NoError(t, err)
	assert.Contains(t, out, `"batchItemFailures": []`)
	assert.Contains(t, out, `"deadLetters": []`)
}

func TestInvokeRefusesWhatIsNotAnSQSEvent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	tests := []struct {
		name    string
		file    string
		wantErr string
	}{
		{name: "an S3 event", file: "../../events/testdata/sqs-not-sqs-event.json", wantErr: "not an SQS event"},
		{name: "not JSON", file: write("x.json", "hello"), wantErr: "not an SQS event: not a JSON object"},
		{name: "no Records", file: write("y.json", `{"detail-type":"x"}`), wantErr: `no "Records" array`},
		{name: "no such file", file: filepath.Join(dir, "missing.json"), wantErr: "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, err := invokeCLI(t, "invoke", "--event", tt.file)
			require.Error(t, err)
			assert.ErrorContains(t, err, tt.wantErr)
			assert.Equal(t, 2, exitCode(err))
			assert.Empty(t, out, "nothing is printed as a result")
		})
	}
}

func TestBench(t *testing.T) {
	t.Parallel()
	out, err := invokeCLI(t, "bench", "--event", "../../events/testdata/sqs-mixed.json", "--repeats", "3", "--warmup", "1")
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	for _, k := range []string{"records", "repeats", "records_per_s", "ns_per_record", "cpu_ns_per_record", "rss_mb", "failures_by_kind", "ok_digest", "decoder", "goarch"} {
		assert.Contains(t, got, k)
	}
	assert.Equal(t, 18.0, got["records"])
	assert.Equal(t, 3.0, got["repeats"])
	// mixed: 9 dead-lettered at once, 2 on their last receive, 2 retried.
	assert.Equal(t, map[string]any{"poison": 9.0, "transient": 2.0, "exhausted": 2.0}, got["failures_by_kind"])
	assert.Len(t, got["ok_digest"], 64)
}

// TestBenchDigest checks ok_digest against its definition on the valid fixture.
func TestBenchDigest(t *testing.T) {
	t.Parallel()
	out, err := invokeCLI(t, "bench", "--event", "../../events/testdata/sqs-valid.json", "--repeats", "1", "--warmup", "0")
	require.NoError(t, err)
	var got struct {
		OKDigest string `json:"ok_digest"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	ev, err := readSQSEvent("../../events/testdata/sqs-valid.json")
	require.NoError(t, err)
	want := sha256Lines(t, ev)
	assert.Equal(t, want, got.OKDigest)
}

// sha256Lines recomputes ok_digest with encoding/json, independently of the
// worker's decoder: every record of the event is expected to succeed.
func sha256Lines(t *testing.T, ev events.SQSEvent) string {
	t.Helper()
	h := sha256.New()
	for _, r := range ev.Records {
		var body struct {
			Args json.RawMessage `json:"args"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.Body), &body))
		sum := sha256.Sum256(body.Args)
		fmt.Fprintf(h, "%s:%s\n", r.MessageId, hex.EncodeToString(sum[:]))
	}
	return hex.EncodeToString(h.Sum(nil))
}
