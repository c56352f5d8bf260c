package sampleworker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/agenttask"
	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/internal/sqsio"
	"github.com/agentdlq/agentdlq/ledger"
)

func TestEffectDir(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := EffectDir{Dir: filepath.Join(t.TempDir(), "effects")}
	log, err := d.Lookup(ctx, "acme:r:1")
	require.NoError(t, err)
	assert.Equal(t, EffectLog{}, log, "a key never seen, before the directory exists")

	require.NoError(t, d.Reached(ctx, "acme:r:1"))
	require.NoError(t, d.Applied(ctx, "acme:r:1", "abc"))
	require.NoError(t, d.Reached(ctx, "acme:r:2"))
	log, err = d.Lookup(ctx, "acme:r:1")
	require.NoError(t, err)
	assert.Equal(t, EffectLog{Reached: 1, Receipts: []string{"abc"}}, log)
	log, err = d.Lookup(ctx, "acme:r:2")
	require.NoError(t, err)
	assert.Equal(t, EffectLog{Reached: 1}, log)

	// Bad input is refused and writes nothing.
	assert.Error(t, d.Applied(ctx, "acme:r:3", ""))
	assert.Error(t, d.Applied(ctx, "acme:r:3", "two words"))
	assert.Error(t, d.Reached(ctx, ""))
	assert.Error(t, EffectDir{}.Reached(ctx, "k"))
	log, err = d.Lookup(ctx, "acme:r:3")
	require.NoError(t, err)
	assert.Equal(t, EffectLog{}, log)

	// Keys are file names by their hash: any key is safe.
	require.NoError(t, d.Reached(ctx, "../../etc/passwd"))
	entries, err := os.ReadDir(d.Dir)
	require.NoError(t, err)
	assert.Len(t, entries, 3)

	// Concurrent writers keep their lines whole.
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() { assert.NoError(t, d.Applied(ctx, "acme:r:4", fmt.Sprintf("r%02d", i))) })
	}
	wg.Wait()
	log, err = d.Lookup(ctx, "acme:r:4")
	require.NoError(t, err)
	assert.Len(t, log.Receipts, 50)

	// A damaged file is an error, not a verdict.
	f, err := d.file("acme:r:5")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(f, []byte("sent it, I think\n"), 0o644))
	_, err = d.Lookup(ctx, "acme:r:5")
	assert.ErrorContains(t, err, "unreadable line")
}

func TestVerifier(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	args := []byte(`{"to":["oncall@example.com"],"subject":"s"}`)
	call := agenttask.Call{Key: "k", Task: agenttask.Task{Tool: "email.send", Args: args}}
	tests := []struct {
		name     string
		reached  int
		receipts []string
		want     agenttask.Verdict
		receipt  string // want
		evidence string // a part of it
	}{
		{"applied", 1, []string{Receipt(args)}, agenttask.VerdictConfirmed, Receipt(args), "took effect 1 time(s)"},
		{"applied twice: a duplicate, still confirmed", 2, []string{Receipt(args), Receipt(args)}, agenttask.VerdictConfirmed, Receipt(args), "a duplicate effect"},
		{"reached, nothing applied", 2, nil, agenttask.VerdictNoEffect, "", "2 call(s) of email.send reached it for the key, none took effect"},
		{"never reached", 0, nil, agenttask.VerdictUnknown, "", "no call for the key reached it"},
		{"applied with other args: the key was reused", 1, []string{Receipt([]byte(`{}`))}, agenttask.VerdictUnknown, "", "other args"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := EffectDir{Dir: t.TempDir()}
			for range tt.reached {
				require.NoError(t, d.Reached(ctx, "k"))
			}
			for _, r := range tt.receipts {
				require.NoError(t, d.Applied(ctx, "k", r))
			}
			v, err := Verifier(d)(ctx, call)
			require.NoError(t, err)
			assert.Equal(t, tt.want, v.Verdict)
			assert.Equal(t, tt.receipt, v.Receipt)
			assert.Contains(t, v.Evidence, tt.evidence)
			assert.NoError(t, v.Check(), "a verdict a reconciliation can take")
			assert.NotContains(t, v.Evidence, "oncall@example.com", "no args in the evidence")
		})
	}
	_, err := Verifier(EffectDir{})(ctx, call)
	assert.Error(t, err, "a store that cannot be read is an error: unknown, never no effect")
}

func TestCatalogRegistersVerifiersOnMutatingTools(t *testing.T) {
	t.Parallel()
	c := Catalog(EffectDir{Dir: t.TempDir()})
	for name, tool := range c {
		assert.Equal(t, tool.Mutates, tool.Verify != nil, name)
	}
	assert.NotNil(t, c["email.send"].Verify)
	assert.NotNil(t, c["file.write"].Verify)
	for name, tool := range Catalog(nil) {
		assert.Nil(t, tool.Verify, name)
	}
	// NewCatalog refuses a verifier on a tool that does not mutate.
	_, err := agenttask.NewCatalog(agenttask.Tool{Name: "web.search", Versions: "1", Verify: Verifier(EffectDir{Dir: t.TempDir()})})
	assert.ErrorContains(t, err, "has a verifier but does not mutate")
}

// The worker records each mutating call where it lands: applied without a
// fault and with lost_reply, reached only with timeout_after_effect;
// read-only tools leave nothing. The verifier then tells the three apart.
func TestWorkerRecordsEffects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	eff := EffectDir{Dir: t.TempDir()}
	p, q := testPipeline(t, false, 4)
	rec := &sqsio.Recorder{}
	led := ledger.NewMemory()
	w, err := New(Config{Pipeline: p, Queues: q, SQS: rec, Ledger: led, Effects: eff,
		Logger: slog.New(slog.DiscardHandler), Metrics: io.Discard})
	require.NoError(t, err)
	body := func(key, tool, fault string) string {
		args := `{"to":["a@example.com"],"subject":"s"` + fault + `}`
		return fmt.Sprintf(`{"task_id":"t-%s","run_id":"r","tenant":"acme","idempotency_key":%q,"tool":%q,"tool_version":"1","trace_id":"x","created_at":"2026-11-29T12:00:00Z","schema_version":1,"args":%s}`,
			key, key, tool, args)
	}
	cases := []struct {
		key, tool, fault string
		want             agenttask.Verdict
		reason           deadletter.Reason // of the dead letter, "" for none
	}{
		{"ok", "email.send", "", agenttask.VerdictConfirmed, ""},
		{"timeout", "email.send", `,"fault":{"kind":"timeout_after_effect"}`, agenttask.VerdictNoEffect, deadletter.ReasonEffectUnknown},
		{"lost", "file.write", `,"fault":{"kind":"lost_reply"}`, agenttask.VerdictConfirmed, deadletter.ReasonEffectUnknown},
		{"read", "web.search", `,"fault":{"kind":"lost_reply"}`, agenttask.VerdictUnknown, ""},
	}
	var ev events.SQSEvent
	for i, c := range cases {
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: fmt.Sprintf("m%d", i), Body: body(c.key, c.tool, c.fault),
			EventSourceARN: q.HotARN, Attributes: map[string]string{"ApproximateReceiveCount": "1", "SentTimestamp": "1764417600000"}})
	}
	resp, err := w.Handle(ctx, ev)
	require.NoError(t, err)
	dls, err := rec.DeadLetters()
	require.NoError(t, err)
	reasons := map[string]deadletter.Reason{}
	for _, dl := range dls {
		var i int
		_, err := fmt.Sscanf(dl.MessageID, "m%d", &i)
		require.NoError(t, err)
		reasons[cases[i].key] = dl.Reason
	}
	failed := len(resp.BatchItemFailures)
	assert.Equal(t, 1, failed, "the read-only timeout is transient: retried")
	for _, c := range cases {
		assert.Equal(t, c.reason, reasons[c.key], c.key)
		task, err := agenttask.DecodeTask([]byte(body(c.key, c.tool, c.fault)), nil)
		require.NoError(t, err)
		v, err := Verifier(eff)(ctx, agenttask.Call{Key: c.key, Task: task})
		require.NoError(t, err)
		assert.Equal(t, c.want, v.Verdict, "%s: %s", c.key, v.Evidence)
		if c.reason == deadletter.ReasonEffectUnknown {
			e, _, err := led.Get(ctx, ledger.Key(p.Name, "acme", c.key))
			require.NoError(t, err)
			assert.True(t, strings.HasPrefix(string(e.State), "dead"), "%+v", e)
			assert.True(t, e.EffectStarted && e.Receipt == "", "the ledger still says unknown: only a verifier knows")
		}
	}
}

// TestCatalogIsValid: the sample tools pass NewCatalog, each supporting
// Versions; with effects, exactly the mutating ones have a verifier.
func TestCatalogIsValid(t *testing.T) {
	t.Parallel()
	var tools []agenttask.Tool
	for _, tool := range Catalog(EffectDir{Dir: t.TempDir()}) {
		tools = append(tools, tool)
		assert.Equal(t, tool.Mutates, tool.Verify != nil, tool.Name)
		assert.True(t, tool.SupportsVersion("3.9.0"), tool.Name)
		assert.False(t, tool.SupportsVersion("4.0.0"), tool.Name)
	}
	_, err := agenttask.NewCatalog(tools...)
	require.NoError(t, err)
	assert.Len(t, tools, 8)
	for _, tool := range Catalog(nil) {
		assert.Nil(t, tool.Verify, tool.Name)
	}
}
