package sampleworker

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/internal/sqsio"
	"github.com/agentdlq/agentdlq/ledger"
)

func TestDependencyDir(t *testing.T) {
	t.Parallel()
	d := DependencyDir{Dir: filepath.Join(t.TempDir(), "dependencies")}
	ctx := context.Background()

	down, err := d.Down(ctx, "search-api")
	require.NoError(t, err)
	assert.False(t, down, "a dependency never switched is up, even before the directory exists")

	steps := []struct {
		name     string
		dep      string
		down     bool     // what Set is asked
		wantDown []string // ListDown after the step
	}{
		{name: "down", dep: "search-api", down: true, wantDown: []string{"search-api"}},
		{name: "down twice is no error", dep: "search-api", down: true, wantDown: []string{"search-api"}},
		{name: "another down", dep: "mail.relay", down: true, wantDown: []string{"mail.relay", "search-api"}},
		{name: "up", dep: "search-api", down: false, wantDown: []string{"mail.relay"}},
		{name: "up twice is no error", dep: "search-api", down: false, wantDown: []string{"mail.relay"}},
	}
	for _, s := range steps {
		require.NoError(t, d.Set(s.dep, s.down), s.name)
		got, err := d.Down(ctx, s.dep)
		require.NoError(t, err, s.name)
		assert.Equal(t, s.down, got, s.name)
		list, err := d.ListDown()
		require.NoError(t, err, s.name)
		assert.Equal(t, s.wantDown, list, s.name)
	}
}

func TestDependencyNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ok   bool
	}{
		{"search-api", true},
		{"mail.relay_2", true},
		{"", false},
		{"../etc", false},
		{"a/b", false},
		{".hidden", false},
		{"Upper", false},
		{string(make([]byte, 65)), false},
	}
	for _, tt := range tests {
		err := CheckDependencyName(tt.name)
		assert.Equal(t, tt.ok, err == nil, "%q: %v", tt.name, err)
		if !tt.ok {
			assert.ErrorIs(t, err, ErrDependencyName)
			assert.Error(t, DependencyDir{Dir: t.TempDir()}.Set(tt.name, true), "Set refuses %q", tt.name)
		}
	}
}

// fakeDeps is Dependencies with a behaviour switch.
type fakeDeps struct {
	down map[string]bool
	err  error // every Down fails with it
}

var _ Dependencies = (*fakeDeps)(nil)

func (f *fakeDeps) Down(_ context.Context, name string) (bool, error) { return f.down[name], f.err }

// A task whose fault names a dependency fails only while it is down; an
// unreadable health is a retry, never a success or a dead letter.
func TestFaultFollowsItsDependency(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		deps     Dependencies // nil: no health (fail on every receive)
		failures int          // batch item failures (the first record, receive 1 of 4)
		sent     int          // dead letters (the second record, on its last receive)
	}{
		{name: "no dependency health: the fault always fails", deps: nil, failures: 1, sent: 1},
		{name: "search-api down", deps: &fakeDeps{down: map[string]bool{"search-api": true}}, failures: 1, sent: 1},
		{name: "search-api up", deps: &fakeDeps{down: map[string]bool{"other": true}}, failures: 0, sent: 0},
		{name: "health unreadable: retried inside the budget", deps: &fakeDeps{err: errors.New("disk gone")}, failures: 1, sent: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ev, _ := loadEvent(t, "sqs-dependency-open.json")
			rec := &sqsio.Recorder{}
			p, q := testPipeline(t, false, 4)
			w, err := New(Config{Pipeline: p, Queues: q, SQS: rec, Ledger: ledger.NewMemory(), Dependencies: tt.deps,
				Logger: slog.New(slog.DiscardHandler), Metrics: io.Discard, Rand: func(int64) int64 { return 0 }})
			require.NoError(t, err)
			resp, err := w.Handle(context.Background(), ev)
			require.NoError(t, err)
			assert.Len(t, resp.BatchItemFailures, tt.failures)
			assert.Len(t, rec.Sent(), tt.sent)
		})
	}
}

// A fault whose dependency is no dependency name is the producer's bug: it
// is dead-lettered at once as schema_invalid (poison), on its first
// receive, and never retried as if an outage could end. It used to be read
// as a health read failure: four receives, then a redrivable
// budget_exhausted.
func TestInvalidDependencyNameIsPoison(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"../etc/passwd", "Search API", "-search", strings.Repeat("a", 65), "search/api"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, deps := range []Dependencies{DependencyDir{Dir: t.TempDir()}, nil} {
				ev, _ := loadEvent(t, "sqs-dependency-open.json")
				ev.Records = ev.Records[:1]
				body := strings.Replace(ev.Records[0].Body, `"dependency":"search-api"`, `"dependency":`+strconv.Quote(name), 1)
				require.NotEqual(t, ev.Records[0].Body, body)
				ev.Records[0].Body = body
				rec := &sqsio.Recorder{}
				p, q := testPipeline(t, false, 4)
				w, err := New(Config{Pipeline: p, Queues: q, SQS: rec, Ledger: ledger.NewMemory(), Dependencies: deps,
					Logger: slog.New(slog.DiscardHandler), Metrics: io.Discard, Rand: func(int64) int64 { return 0 }})
				require.NoError(t, err)
				resp, err := w.Handle(context.Background(), ev)
				require.NoError(t, err)
				assert.Empty(t, resp.BatchItemFailures, "not retried")
				require.Len(t, rec.Sent(), 1, "dead-lettered on the first receive")
				assert.Equal(t, string(deadletter.ReasonSchemaInvalid), aws.ToString(rec.Sent()[0].MessageAttributes[deadletter.AttrReason].StringValue))
			}
		})
	}
}
