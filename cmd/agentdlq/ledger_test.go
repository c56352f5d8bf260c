package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/testkit/localtest"
)

func TestLedgerGetBadInput(t *testing.T) {
	t.Setenv("AGENTDLQ_LEDGER_TABLE", "")
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", "")
	_, code := runCLI(t, "ledger", "get")
	assert.Equal(t, 2, code, "no --key")
	_, code = runCLI(t, "ledger", "get", "--key", "k")
	assert.Equal(t, 2, code, "no table, no local endpoint")
}

// TestLedgerGetEmulator reads what the worker's ledger wrote: a done key with
// its receipt, an effect started without a receipt (the effect_unknown
// case an operator reconciles), and a key the ledger never saw.
func TestLedgerGetEmulator(t *testing.T) {
	table, l := ledgerWithDoneKey(t)
	ctx := t.Context()
	now := time.Now()
	_, err := l.Begin(ctx, "mail-key", "m2", "", now, time.Minute)
	require.NoError(t, err)
	require.NoError(t, l.StartEffect(ctx, "mail-key", "m2", now))
	_, err = l.DeadLettered(ctx, "mail-key", deadletter.ReasonEffectUnknown, now)
	require.NoError(t, err)

	stdout, stderr, code := runArgs(t, "ledger", "get", "--ledger-table", table, "--key", "done-key", "--key", "mail-key", "-o", "json")
	require.Equal(t, 0, code, stdout+stderr)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	require.Len(t, lines, 2, stdout)
	var done, mail ledger.Entry
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &done))
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &mail))
	assert.Equal(t, ledger.StateDone, done.State)
	assert.Equal(t, "receipt-abc", done.Receipt)
	assert.Equal(t, ledger.StateDeadLettered, mail.State)
	assert.True(t, mail.EffectStarted)
	assert.Empty(t, mail.Receipt, "effect started, no receipt: reconcile with the external system")
	assert.Equal(t, deadletter.ReasonEffectUnknown, mail.LastReason)
	assert.Equal(t, 1, mail.DeadLetterCount)

	// The table: a header and a row a key.
	stdout, stderr, code = runArgs(t, "ledger", "get", "--ledger-table", table, "--key", "done-key")
	require.Equal(t, 0, code, stdout+stderr)
	lines = strings.Split(strings.TrimSpace(stdout), "\n")
	require.Len(t, lines, 2, stdout)
	assert.Regexp(t, `^KEY\s+STATE\s+EFFECT STARTED\s+RECEIPT`, lines[0])
	assert.Regexp(t, `^done-key\s+done\s+no\s+receipt-abc\s+0\s+0\s`, lines[1])
	assert.Regexp(t, `ARGS DIGEST$`, lines[0])
	assert.Regexp(t, `\sjcs-sha256:0123456789ab…$`, lines[1], "the digest, shortened: -o json has it whole")
}

// A key the ledger does not hold is not found: exit 2 and a message that
// names it, after the entries of the keys found; with -o json the error
// object (code not_found) after their lines.
func TestLedgerGetNotFoundEmulator(t *testing.T) {
	table, _ := ledgerWithDoneKey(t)

	stdout, stderr, code := runArgs(t, "ledger", "get", "--ledger-table", table, "--key", "never-seen")
	assert.Equal(t, exitRefused, code, stdout+stderr)
	assert.Empty(t, stdout, "no row for a key not found")
	assert.Contains(t, stderr, "agentdlq: ledger get: not in the ledger: never-seen")
	assert.NotContains(t, stderr, "--help", "the command line was well formed")

	stdout, stderr, code = runArgs(t, "ledger", "get", "--ledger-table", table, "--key", "done-key", "--key", "never-seen", "--key", "gone-too")
	assert.Equal(t, exitRefused, code)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	require.Len(t, lines, 2, stdout)
	assert.Regexp(t, `^done-key\s+done\s`, lines[1], "the key found is printed")
	assert.Contains(t, stderr, "not in the ledger: never-seen, gone-too")

	stdout, _, code = runArgs(t, "ledger", "get", "--ledger-table", table, "--key", "done-key", "--key", "never-seen", "-o", "json")
	assert.Equal(t, exitRefused, code)
	dec := json.NewDecoder(strings.NewReader(stdout))
	var done ledger.Entry
	require.NoError(t, dec.Decode(&done), stdout)
	assert.Equal(t, "done-key", done.Key)
	var je map[string]any
	require.NoError(t, dec.Decode(&je), stdout)
	assert.Equal(t, "not_found", je["code"])
	assert.EqualValues(t, 2, je["exit_code"])
	assert.Contains(t, je["error"], "not in the ledger: never-seen")
	assert.False(t, dec.More(), "nothing after the error")
}

// One rule names the ledger table for triage, redrive, work and ledger get.
func TestLedgerTableName(t *testing.T) {
	tests := []struct {
		name, flag, env, endpoint string
		want                      string // "" means none: the command must ask for one
	}{
		{"flag wins", "flag-table", "env-table", "http://127.0.0.1:4567", "flag-table"},
		{"then the environment", "", "env-table", "http://127.0.0.1:4567", "env-table"},
		{"local endpoints: the local table", "", "", "http://127.0.0.1:4567", "agentdlq-ledger"},
		{"AWS with nothing named: none, never a guess", "", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("AGENTDLQ_LEDGER_TABLE", tt.env)
			t.Setenv("AWS_ENDPOINT_URL", "")
			t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", tt.endpoint)
			assert.Equal(t, tt.want, ledgerTableName(tt.flag))
		})
	}
}

// ledgerWithDoneKey is a fresh ledger table on the emulator holding one key,
// done-key, done with receipt-abc.
func ledgerWithDoneKey(t *testing.T) (string, *ledger.Dynamo) {
	t.Helper()
	cfg := localtest.AWS(t)
	table := localtest.Table(t, cfg)
	l := ledger.NewDynamo(dynamodb.NewFromConfig(cfg), table)
	now := time.Now()
	_, err := l.Begin(t.Context(), "done-key", "m1", "jcs-sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", now, time.Minute)
	require.NoError(t, err)
	require.NoError(t, l.Complete(t.Context(), "done-key", "m1", "receipt-abc", now))
	return table, l
}
