package pipeline

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/breaker"
	"github.com/agentdlq/agentdlq/events/deadletter"
)

func valid() Pipeline {
	return Pipeline{Name: "agent-tasks", Owner: "platform-oncall", MaxReceiveCount: 4}
}

func ptr[T any](v T) *T { return &v }

func TestDefaults(t *testing.T) {
	t.Parallel()
	p := valid()
	p.ApplyDefaults()
	require.NoError(t, p.Validate())
	assert.Equal(t, 96*time.Hour, p.Retention(), "hot queue keeps 4 days by default")
	assert.Equal(t, 14*24*time.Hour, p.DLQRetention(), "DLQ keeps the SQS maximum of 14 days")
	assert.Equal(t, 30*time.Second, p.WorkerTimeout())
	assert.Equal(t, 180*time.Second, p.VisibilityTimeout(), "six times the worker timeout")
	assert.Equal(t, 10, p.BatchSize)
	assert.Equal(t, FIFOPoisonDeadLetter, p.FIFOPoison)
	assert.Equal(t, 3, p.Eval.Threshold)
	assert.Equal(t, 1032192, p.MaxMessageBytes, "1 MiB less the dead-letter reserve")
	assert.Equal(t, 1<<20, p.DLQMaxMessageBytes(), "the DLQ takes SQS's 1 MiB")
	assert.Equal(t, "agent-tasks", p.HotQueueName())
	assert.Equal(t, "agent-tasks-dlq", p.DLQName())
	assert.Equal(t, 10, p.MaxConcurrency)
	assert.Equal(t, 10, p.ReservedConcurrency, "the reserved concurrency covers the maximum concurrency")
	assert.Equal(t, 1, p.Alarms.ESMDroppedEvents)
	assert.Equal(t, 50, p.Alarms.ESMFailedPercent)
	// Provisioned mode: no maximum concurrency, the reserved concurrency
	// covers ten invocations a poller.
	pp := valid()
	pp.ProvisionedPollers = &ProvisionedPollers{Maximum: 4}
	pp.ApplyDefaults()
	require.NoError(t, pp.Validate())
	assert.Equal(t, 0, pp.MaxConcurrency, "provisioned mode takes no maximum concurrency")
	assert.Equal(t, 2, pp.ProvisionedPollers.Minimum)
	assert.Equal(t, 40, pp.MappingConcurrency())
	assert.Equal(t, 40, pp.ReservedConcurrency)
	// The worker reads the definition back as the construct wrote it.
	b, err := json.Marshal(pp)
	require.NoError(t, err)
	back, err := ParseOne(b)
	require.NoError(t, err, "%s", b)
	assert.Equal(t, pp, *back)
	assert.Equal(t, 99.9, p.SLO.TargetPercent)
	assert.InDelta(t, 0.001, p.SLO.ErrorBudget(), 1e-12)
	assert.True(t, p.FairQueueTenants(), "a standard queue's producers set the tenant as MessageGroupId by default")
	p.FIFO = true
	assert.False(t, p.FairQueueTenants(), "a FIFO queue's MessageGroupId is the run")
	assert.Equal(t, "agent-tasks-dlq.fifo", p.DLQName())
	// The breaker's defaults: it opens on the failures of two tenants at least.
	bp := valid()
	bp.Breaker, bp.RetryAfterRequeues = Breaker{Enabled: true}, 88
	bp.ApplyDefaults()
	require.NoError(t, bp.Validate())
	assert.Equal(t, 2, bp.Breaker.MinTenants, "one tenant's failures do not open the breaker by default")
	assert.Equal(t, 2, bp.Breaker.Settings().MinTenants)
	require.NoError(t, json.Unmarshal([]byte(`{"enabled":true,"min_tenants":1}`), &bp.Breaker))
	bp.ApplyDefaults()
	require.NoError(t, bp.Validate())
	assert.Equal(t, 1, bp.Breaker.Settings().MinTenants, "a single-tenant pipeline sets min_tenants 1")
}

func TestValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		mutate func(*Pipeline)
		// wantErr is a fragment of the error; "" means valid.
		wantErr string
	}{
		{"defaults are valid", func(*Pipeline) {}, ""},
		{"max receive 3", func(p *Pipeline) { p.MaxReceiveCount = 3 }, ""},
		{"max receive 5", func(p *Pipeline) { p.MaxReceiveCount = 5 }, ""},
		{"max receive 1", func(p *Pipeline) { p.MaxReceiveCount = 1 }, "max_receive_count 1 is outside 3..5"},
		{"max receive 10", func(p *Pipeline) { p.MaxReceiveCount = 10 }, "max_receive_count 10 is outside 3..5"},
		{"missing owner", func(p *Pipeline) { p.Owner = " " }, "owner is required"},
		{"bad name", func(p *Pipeline) { p.Name = "Agent_Tasks" }, "name must be"},
		{"dlq retention shorter", func(p *Pipeline) { p.RetentionHours, p.DLQRetentionHours = 96, 48 }, "dlq_retention_hours 48 must exceed retention_hours 96"},
		{"dlq retention equal", func(p *Pipeline) { p.RetentionHours, p.DLQRetentionHours = 96, 96 }, "must exceed"},
		{"dlq retention above 14 days", func(p *Pipeline) { p.DLQRetentionHours = 400 }, "dlq_retention_hours 400 is outside SQS's 1..336 hours"},
		{"visibility below 6x", func(p *Pipeline) { p.WorkerTimeoutSeconds, p.VisibilityTimeoutSeconds = 60, 120 }, "at least six times"},
		{"fifo batch 11", func(p *Pipeline) { p.FIFO, p.BatchSize = true, 11 }, "batch_size 11 is outside 1..10"},
		{"fifo window", func(p *Pipeline) { p.FIFO, p.BatchWindowSeconds = true, 1 }, "must be 0 for a FIFO queue"},
		{"big batch needs window", func(p *Pipeline) { p.BatchSize = 100 }, "needs batch_window_seconds"},
		{"concurrency 1", func(p *Pipeline) { p.MaxConcurrency = 1 }, "max_concurrency 1"},
		{"fifo poison unknown", func(p *Pipeline) { p.FIFOPoison = "drop" }, "fifo_poison"},
		{"retry-after requeues", func(p *Pipeline) { p.RetryAfterRequeues = 3 }, ""},
		{"retry-after requeues on a FIFO queue", func(p *Pipeline) { p.FIFO, p.RetryAfterRequeues = true, 3 }, "retry_after_requeues needs a standard queue"},
		{"retry-after requeues 101", func(p *Pipeline) { p.RetryAfterRequeues = 101 }, "retry_after_requeues 101 is outside 0..100"},
		{"retry-after requeues negative", func(p *Pipeline) { p.RetryAfterRequeues = -1 }, "retry_after_requeues -1 is outside"},
		{"breaker without enough requeues", func(p *Pipeline) {
			p.Breaker = Breaker{Enabled: true, Threshold: 5, WindowSeconds: 60, OpenSeconds: 30, Probes: 3, RampSeconds: 60, ToleranceSeconds: 600}
			p.RetryAfterRequeues = 10
		}, "breaker needs retry_after_requeues of at least 88"},
		{"breaker on a FIFO queue", func(p *Pipeline) {
			p.Breaker = Breaker{Enabled: true, Threshold: 5, WindowSeconds: 60, OpenSeconds: 30, Probes: 3, RampSeconds: 60, ToleranceSeconds: 600}
			p.FIFO = true
		}, "breaker needs a standard queue"},
		{"breaker probes out of range", func(p *Pipeline) {
			p.Breaker = Breaker{Enabled: true, Threshold: 5, WindowSeconds: 60, OpenSeconds: 30, Probes: 101, RampSeconds: 60, ToleranceSeconds: 60}
			p.RetryAfterRequeues = 100
		}, "probes 101 is outside"},
		{"breaker of one tenant", func(p *Pipeline) {
			p.Breaker = Breaker{Enabled: true, Threshold: 5, MinTenants: 1, WindowSeconds: 60, OpenSeconds: 30, Probes: 3, RampSeconds: 60, ToleranceSeconds: 600}
			p.RetryAfterRequeues = 88
		}, ""},
		{"breaker min_tenants above what the state keeps", func(p *Pipeline) {
			p.Breaker = Breaker{Enabled: true, Threshold: 5, MinTenants: breaker.MaxTenants + 1, WindowSeconds: 60, OpenSeconds: 30, Probes: 3, RampSeconds: 60, ToleranceSeconds: 600}
			p.RetryAfterRequeues = 88
		}, "min_tenants 9 is outside 1..8 (1: a pipeline of a single tenant)"},
		{"breaker min_tenants negative", func(p *Pipeline) {
			p.Breaker = Breaker{Enabled: true, Threshold: 5, MinTenants: -1, WindowSeconds: 60, OpenSeconds: 30, Probes: 3, RampSeconds: 60, ToleranceSeconds: 600}
			p.RetryAfterRequeues = 88
		}, "min_tenants -1 is outside"},
		{"backoff inverted", func(p *Pipeline) { p.Backoff = Backoff{BaseSeconds: 10, MaxSeconds: 5} }, "backoff needs"},
		{"expiry alarm beyond retention", func(p *Pipeline) { p.Alarms.ExpiryRiskHours = 400 }, "expiry_risk_hours"},
		// Raw integers are bounded before they become durations: these
		// overflow int64 nanoseconds into a value that looked valid.
		{"retention overflowing to 96h", func(p *Pipeline) { p.RetentionHours = 5124095576030527 }, "retention_hours 5124095576030527 is outside SQS's 1..336 hours"},
		{"dlq retention overflowing", func(p *Pipeline) { p.DLQRetentionHours = 5124095576030527 + 336 }, "dlq_retention_hours 5124095576030863 is outside"},
		{"negative retention", func(p *Pipeline) { p.RetentionHours = -1 }, "retention_hours -1 is outside"},
		{"worker timeout overflowing", func(p *Pipeline) { p.WorkerTimeoutSeconds = 9223372037 }, "worker_timeout_seconds 9223372037 is outside 1..900"},
		{"visibility overflowing", func(p *Pipeline) { p.VisibilityTimeoutSeconds = 18446744073 }, "visibility_timeout_seconds 18446744073 is outside"},
		{"batch window overflowing", func(p *Pipeline) { p.BatchWindowSeconds = 18446744074 }, "batch_window_seconds 18446744074 is outside"},
		{"backoff overflowing", func(p *Pipeline) { p.Backoff = Backoff{BaseSeconds: 1, MaxSeconds: 18446744074} }, "backoff needs"},
		{"triage window overflowing", func(p *Pipeline) { p.Triage.WarningHours = 5124095576030527 }, "warning_hours 5124095576030527"},
		{"triage seconds overflowing", func(p *Pipeline) { p.Triage.MaxSeconds = 18446744074 }, "max_seconds 18446744074"},
		{"oldest age beyond retention", func(p *Pipeline) { p.Alarms.DLQOldestAgeSeconds = 2_000_000 }, "alarms.dlq_oldest_age_seconds 2000000 exceeds"},
		// The owner is an AWS tag value, compared as it stands.
		{"owner with spaces around", func(p *Pipeline) { p.Owner = " platform-oncall" }, "has spaces around it"},
		{"owner with a trailing newline", func(p *Pipeline) { p.Owner = "platform-oncall\n" }, "has spaces around it"},
		{"owner with a comma", func(p *Pipeline) { p.Owner = "platform,oncall" }, "not a valid AWS tag value"},
		{"owner too long", func(p *Pipeline) { p.Owner = strings.Repeat("a", 257) }, "not a valid AWS tag value"},
		{"owner with tag characters", func(p *Pipeline) { p.Owner = "team:platform/on-call@example.com + ops_1=é" }, ""},
		{"owner of 256", func(p *Pipeline) { p.Owner = strings.Repeat("é", 256) }, ""},
		// The hot queue leaves the DLQ room for the dead-letter attributes.
		{"max message bytes at the most", func(p *Pipeline) { p.MaxMessageBytes = SQSMaxMessageBytes - deadletter.Reserve }, ""},
		{"max message bytes at SQS's least", func(p *Pipeline) { p.MaxMessageBytes = 1024 }, ""},
		{"max message bytes of 1 MiB", func(p *Pipeline) { p.MaxMessageBytes = 1 << 20 },
			"max_message_bytes 1048576 is outside 1024..1032192: SQS allows 1 MiB (1048576 bytes) a message, and the DLQ needs 16384 bytes more"},
		{"max message bytes one over", func(p *Pipeline) { p.MaxMessageBytes = 1040385 }, "max_message_bytes 1040385 is outside"},
		{"max message bytes below SQS's least", func(p *Pipeline) { p.MaxMessageBytes = 1023 }, "max_message_bytes 1023 is outside"},
		{"max message bytes negative", func(p *Pipeline) { p.MaxMessageBytes = -1 }, "max_message_bytes -1 is outside"},
		// The worker's reserved concurrency covers the event source's
		// concurrency: a throttle spends a receive the worker never saw.
		{"reserved concurrency at the maximum", func(p *Pipeline) { p.MaxConcurrency, p.ReservedConcurrency = 20, 20 }, ""},
		{"reserved concurrency above the maximum", func(p *Pipeline) { p.MaxConcurrency, p.ReservedConcurrency = 20, 25 }, ""},
		{"reserved concurrency below the maximum", func(p *Pipeline) { p.MaxConcurrency, p.ReservedConcurrency = 20, 19 },
			"reserved_concurrency 19 is below 20, the most invocations the event source can make at once (max_concurrency 20)"},
		{"reserved concurrency negative", func(p *Pipeline) { p.ReservedConcurrency = -1 }, "reserved_concurrency -1 is below 10"},
		{"concurrency 1001", func(p *Pipeline) { p.MaxConcurrency = 1001 }, "max_concurrency 1001 is outside Lambda's 2..1000"},
		// Provisioned mode: Lambda's bounds, not with a maximum concurrency,
		// and the reserved concurrency covers ten invocations a poller.
		{"provisioned", func(p *Pipeline) { p.ProvisionedPollers = &ProvisionedPollers{Minimum: 2, Maximum: 5} }, ""},
		{"provisioned at the bounds", func(p *Pipeline) {
			p.ProvisionedPollers, p.ReservedConcurrency = &ProvisionedPollers{Minimum: 200, Maximum: 2000}, 20000
		}, ""},
		{"provisioned with max concurrency", func(p *Pipeline) { p.MaxConcurrency, p.ProvisionedPollers = 10, &ProvisionedPollers{Maximum: 5} },
			"max_concurrency 10 cannot go with provisioned_pollers"},
		{"provisioned without a maximum", func(p *Pipeline) { p.ProvisionedPollers = &ProvisionedPollers{Minimum: 2} },
			"provisioned_pollers.maximum is required"},
		{"provisioned minimum 1", func(p *Pipeline) { p.ProvisionedPollers = &ProvisionedPollers{Minimum: 1, Maximum: 5} },
			"provisioned_pollers.minimum 1 is outside Lambda's 2..200"},
		{"provisioned minimum 201", func(p *Pipeline) { p.ProvisionedPollers = &ProvisionedPollers{Minimum: 201, Maximum: 300} },
			"provisioned_pollers.minimum 201 is outside Lambda's 2..200"},
		{"provisioned maximum 2001", func(p *Pipeline) { p.ProvisionedPollers = &ProvisionedPollers{Maximum: 2001} },
			"provisioned_pollers.maximum 2001 is outside Lambda's 2..2000"},
		{"provisioned maximum below minimum", func(p *Pipeline) { p.ProvisionedPollers = &ProvisionedPollers{Minimum: 10, Maximum: 5} },
			"provisioned_pollers.maximum 5 is below its minimum 10"},
		{"provisioned reserved concurrency too low", func(p *Pipeline) {
			p.ProvisionedPollers, p.ReservedConcurrency = &ProvisionedPollers{Maximum: 5}, 49
		}, "reserved_concurrency 49 is below 50, the most invocations the event source can make at once (provisioned_pollers.maximum 5 × 10 invocations a poller)"},
		{"provisioned on a FIFO queue keeps the FIFO batch rules", func(p *Pipeline) {
			p.FIFO, p.BatchSize, p.ProvisionedPollers = true, 11, &ProvisionedPollers{Maximum: 5}
		}, "batch_size 11 is outside 1..10"},
		{"provisioned keeps the batch window rule", func(p *Pipeline) { p.BatchSize, p.ProvisionedPollers = 100, &ProvisionedPollers{Maximum: 5} },
			"needs batch_window_seconds"},
		{"esm failed percent 101", func(p *Pipeline) { p.Alarms.ESMFailedPercent = 101 }, "alarms.esm_failed_percent 101"},
		// Fair queues: the tenant as MessageGroupId on standard queues only.
		{"fair queue tenant off", func(p *Pipeline) { p.FairQueueTenant = ptr(false) }, ""},
		{"fair queue tenant on a FIFO queue", func(p *Pipeline) { p.FIFO, p.FairQueueTenant = true, ptr(true) },
			"fair_queue_tenant needs a standard queue"},
		{"fair queue tenant off on a FIFO queue", func(p *Pipeline) { p.FIFO, p.FairQueueTenant = true, ptr(false) }, ""},
		// The dead-letter SLO's target.
		{"slo target 99", func(p *Pipeline) { p.SLO.TargetPercent = 99 }, ""},
		{"slo target 99.99", func(p *Pipeline) { p.SLO.TargetPercent = 99.99 }, ""},
		{"slo target 100", func(p *Pipeline) { p.SLO.TargetPercent = 100 }, "slo.target_percent 100 is outside 50..100"},
		{"slo target 50", func(p *Pipeline) { p.SLO.TargetPercent = 50 }, "slo.target_percent 50 is outside"},
		{"slo target negative", func(p *Pipeline) { p.SLO.TargetPercent = -1 }, "slo.target_percent -1 is outside"},
		{"esm dropped events negative", func(p *Pipeline) { p.Alarms.ESMDroppedEvents = -1 }, "alarms.esm_dropped_events -1 must be at least 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := valid()
			tt.mutate(&p)
			p.ApplyDefaults()
			err := p.Validate()
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.Contains(t, err.Error(), `pipeline "`+p.Name+`"`, "the error names the pipeline")
		})
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		wantErr string
	}{
		{"not JSON", `{`, "pipeline definition"},
		{"an array", `[{"name":"abc"}]`, `the definition is an array; it must be an object {"version": 1, "pipelines": [...]}`},
		{"empty", ``, "the file is empty"},
		{"cut short", "{\"version\":1,\n\"pipelines\":[", "line 2, column 14: the JSON ends early"},
		{"pipelines not an array", `{"version":1,"pipelines":{}}`, "pipelines is an object; it must be an array"},
		{"a field of the wrong type", "{\"version\":1,\n\"pipelines\":[{\"name\":\"abc\",\"max_receive_count\":\"4\"}]}", "line 2, column 51: pipelines.max_receive_count is a string; it must be a whole number"},
		{"bad syntax", `{"version":1,]`, "line 1, column 15: not valid JSON"},
		{"unknown field", `{"version":1,"pipelines":[{"name":"abc","owner":"x","max_receive_count":4,"maxReceive":3}]}`, `unknown field "maxReceive"`},
		{"wrong version", `{"version":2,"pipelines":[{"name":"abc","owner":"x","max_receive_count":4}]}`, "version 2 is not supported"},
		{"no pipelines", `{"version":1,"pipelines":[]}`, "no pipelines defined"},
		{"duplicate", `{"version":1,"pipelines":[{"name":"abc","owner":"x","max_receive_count":4},{"name":"abc","owner":"y","max_receive_count":4}]}`, `"abc" is defined twice`},
		{"all errors at once", `{"version":1,"pipelines":[{"name":"abc","max_receive_count":9}]}`, "owner is required"},
		{"ok", `{"version":1,"pipelines":[{"name":"abc","owner":"x","max_receive_count":4}]}`, ""},
		{"ok with white space after", "{\"version\":1,\"pipelines\":[{\"name\":\"abc\",\"owner\":\"x\",\"max_receive_count\":4}]}\n\t ", ""},
		{"trailing text", `{"version":1,"pipelines":[{"name":"abc","owner":"x","max_receive_count":4}]} trailing`, "text after the JSON object at byte"},
		{"second object", `{"version":1,"pipelines":[{"name":"abc","owner":"x","max_receive_count":4}]}{"version":1}`, "text after the JSON object"},
		{"overflowing retention in JSON", `{"version":1,"pipelines":[{"name":"abc","owner":"x","max_receive_count":4,"retention_hours":5124095576030527}]}`, "retention_hours 5124095576030527 is outside"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, err := Parse([]byte(tt.in))
			if tt.wantErr == "" {
				require.NoError(t, err)
				require.Len(t, f.Pipelines, 1)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
	_, err := Parse([]byte(`{"version":1,"pipelines":[{"name":"abc","max_receive_count":9}]}`))
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "max_receive_count 9") && strings.Contains(err.Error(), "owner is required"),
		"every problem is reported at once: %v", err)
}

func TestParseOne(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		wantErr string // "" when valid
	}{
		{name: "minimal, defaults applied", in: `{"name":"agent-tasks","owner":"team","max_receive_count":4}`},
		{name: "empty", in: ``, wantErr: "pipeline JSON"},
		{name: "unknown field", in: `{"name":"agent-tasks","owner":"team","max_receive_count":4,"colour":"red"}`, wantErr: `unknown field "colour"`},
		{name: "invalid", in: `{"name":"agent-tasks","owner":"team","max_receive_count":9}`, wantErr: "max_receive_count 9"},
		{name: "a whole file", in: `{"version":1,"pipelines":[]}`, wantErr: `unknown field "version"`},
		{name: "trailing text", in: `{"name":"agent-tasks","owner":"team","max_receive_count":4} x`, wantErr: "text after the JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := ParseOne([]byte(tt.in))
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, 96, p.RetentionHours, "defaults applied")
			assert.Equal(t, 4, p.MaxReceiveCount)
		})
	}
}

// Load names the file, and a definition of the wrong shape is a
// *SyntaxError that says where and what is expected.
func TestLoadNamesTheFileAndTheShape(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "arr.json")
	require.NoError(t, os.WriteFile(path, []byte("[]"), 0o600))
	_, err := Load(path)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "Go value", "no Go type names in the message")
	assert.True(t, strings.HasPrefix(err.Error(), path+": "), "the file comes first: %v", err)
	var se *SyntaxError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "", se.Field)
	assert.Contains(t, se.Msg, `must be an object {"version": 1, "pipelines": [...]}`)
	var je *json.UnmarshalTypeError
	assert.ErrorAs(t, err, &je, "encoding/json's error stays reachable")
}

// The repository's own definition is valid and holds a standard and a FIFO pipeline.
func TestRepositoryDefinition(t *testing.T) {
	t.Parallel()
	f, err := Load("../" + DefaultFile)
	require.NoError(t, err)
	var fifo, std int
	for _, p := range f.Pipelines {
		if p.FIFO {
			fifo++
		} else {
			std++
		}
	}
	assert.Positive(t, fifo)
	assert.Positive(t, std)
	_, err = f.Get("no-such-pipeline")
	assert.ErrorContains(t, err, `unknown pipeline "no-such-pipeline" (known: agent-tasks, agent-steps)`)
	_, err = Load("does-not-exist.json")
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestWorkerDLQMaxMessageBytes(t *testing.T) {
	t.Parallel()
	p := valid()
	p.MaxMessageBytes = 200_000
	p.ApplyDefaults()
	require.NoError(t, p.Validate())
	tests := []struct {
		name    string
		env     map[string]string
		want    int
		wantErr string
	}{
		{name: "unset: the definition's DLQ", want: 200_000 + deadletter.Reserve},
		{name: "set by the construct", env: map[string]string{"AGENTDLQ_DLQ_MAX_MESSAGE_BYTES": "1048576"}, want: 1 << 20},
		{name: "a DLQ made before 2025", env: map[string]string{"AGENTDLQ_DLQ_MAX_MESSAGE_BYTES": "262144"}, want: 262144},
		{name: "SQS's least", env: map[string]string{"AGENTDLQ_DLQ_MAX_MESSAGE_BYTES": "1024"}, want: 1024},
		{name: "over 1 MiB", env: map[string]string{"AGENTDLQ_DLQ_MAX_MESSAGE_BYTES": "1048577"},
			wantErr: `AGENTDLQ_DLQ_MAX_MESSAGE_BYTES "1048577" is not a message size in SQS's 1024..1048576 bytes`},
		{name: "under SQS's least", env: map[string]string{"AGENTDLQ_DLQ_MAX_MESSAGE_BYTES": "1023"}, wantErr: `"1023" is not a message size`},
		{name: "a unit", env: map[string]string{"AGENTDLQ_DLQ_MAX_MESSAGE_BYTES": "1MiB"}, wantErr: `"1MiB" is not a message size`},
		{name: "space around", env: map[string]string{"AGENTDLQ_DLQ_MAX_MESSAGE_BYTES": " 262144"}, wantErr: `" 262144" is not a message size`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := p.WorkerDLQMaxMessageBytes(func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
				assert.Zero(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestFairQueueTenants(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		fifo bool
		set  *bool
		want bool
	}{
		{"standard, unset: on", false, nil, true},
		{"standard, on", false, ptr(true), true},
		{"standard, off", false, ptr(false), false},
		{"FIFO, unset: off (MessageGroupId is the run)", true, nil, false},
		{"FIFO, off", true, ptr(false), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := valid()
			p.FIFO, p.FairQueueTenant = tt.fifo, tt.set
			p.ApplyDefaults()
			require.NoError(t, p.Validate())
			assert.Equal(t, tt.want, p.FairQueueTenants())
		})
	}
}

func TestTenantGroupID(t *testing.T) {
	t.Parallel()
	tests := []struct{ tenant, want string }{
		{"acme", "acme"},
		{"tenant-0042", "tenant-0042"},
		{"org:acme/team_1@eu", "org:acme/team_1@eu"},
		{"", ""},
		{"acme corp", ""}, // a space
		{"café", ""},      // non-ASCII
		{"acme\n", ""},    // a control character
		{strings.Repeat("a", 128), strings.Repeat("a", 128)},
		{strings.Repeat("a", 129), ""},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, TenantGroupID(tt.tenant), "%q", tt.tenant)
	}
}

func TestSendersOfTag(t *testing.T) {
	t.Parallel()
	if got := SendersOfTag(" AROA1  AROA2 "); len(got) != 2 || got[0] != "AROA1" || got[1] != "AROA2" {
		t.Errorf("SendersOfTag = %q", got)
	}
	if SendersOfTag("  ") != nil {
		t.Error("a tag naming no sender is nil, not an empty list (Queues compare whole)")
	}
}
