package render

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/triage/report"
)

func TestSLOLine(t *testing.T) {
	t.Parallel()
	known := &report.SLOStatus{TargetPercent: 99.9, PeriodSeconds: 3600, DeadLettered: 4}
	known.SpendBudget(3996)
	read := &report.SLOStatus{TargetPercent: 99.9, PeriodSeconds: 3600, DeadLettered: 4, ProcessedSource: "CloudWatch AgentDLQ Processed"}
	read.SpendBudget(39996)
	over := &report.SLOStatus{TargetPercent: 99.9, PeriodSeconds: 3600, DeadLettered: 18, ProcessedSource: "CloudWatch AgentDLQ Processed"}
	over.SpendBudget(8)
	little := &report.SLOStatus{TargetPercent: 99.9, PeriodSeconds: 3600, DeadLettered: 3}
	little.SpendBudget(1997)
	huge := &report.SLOStatus{TargetPercent: 99.999, PeriodSeconds: 3600, DeadLettered: 100000}
	huge.SpendBudget(0)
	tests := []struct {
		name string
		slo  *report.SLOStatus
		want string
	}{
		{"no SLO section", nil, ""},
		{"processed unknown", &report.SLOStatus{TargetPercent: 99.9, PeriodSeconds: 3600, DeadLettered: 4},
			"SLO 99.9 % of tasks not dead-lettered: 4 dead letters in the last 1h0m (error budget spent: not known to triage; give the period's processed count, agentdlq triage --processed N)"},
		{"processed given", known,
			"SLO 99.9 % of tasks not dead-lettered: 4 dead letters in the last 1h0m of 4000 tasks (0.1 % bad): 100 % of the period's error budget spent"},
		{"processed read", read,
			"SLO 99.9 % of tasks not dead-lettered: 4 dead letters in the last 1h0m of 40000 tasks (0.01 % bad): 10 % of the period's error budget spent (processed: CloudWatch AgentDLQ Processed)"},
		{"over budget", over,
			"SLO 99.9 % of tasks not dead-lettered: 18 dead letters in the last 1h0m of 26 tasks (69.231 % bad): 69230.8 % of the period's error budget spent, 692× the rate the target allows (processed: CloudWatch AgentDLQ Processed)"},
		{"a little over", little,
			"SLO 99.9 % of tasks not dead-lettered: 3 dead letters in the last 1h0m of 2000 tasks (0.15 % bad): 150 % of the period's error budget spent, 1.5× the rate the target allows"},
		{"no exponent", huge,
			"SLO 99.999 % of tasks not dead-lettered: 100000 dead letters in the last 1h0m of 100000 tasks (100 % bad): 10000000 % of the period's error budget spent, 100000× the rate the target allows"},
		{"read failed", &report.SLOStatus{TargetPercent: 99.9, PeriodSeconds: 3600, DeadLettered: 4, BudgetUnknown: "the processed count could not be read: AccessDenied"},
			"SLO 99.9 % of tasks not dead-lettered: 4 dead letters in the last 1h0m (error budget spent: not known; the processed count could not be read: AccessDenied)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, SLOLine(&report.Report{SLO: tt.slo}))
		})
	}
}

func TestTenantsRenderTheDominantTenant(t *testing.T) {
	t.Parallel()
	r := &report.Report{Pipeline: "agent-tasks", Totals: report.Totals{Messages: 14}, Tenants: []report.TenantTotal{
		{Tenant: "acme", Count: 12, SharePercent: 85.7, Dominant: true, ByReason: []report.TenantReason{{Reason: deadletter.ReasonSchemaInvalid, Count: 12}}},
		{Tenant: "", Count: 2, SharePercent: 14.3, ByReason: []report.TenantReason{{Reason: deadletter.ReasonJSONInvalid, Count: 2}}},
	}}
	var text, mdown strings.Builder
	require.NoError(t, Text(&text, r))
	require.NoError(t, Markdown(&mdown, r))
	assert.Contains(t, text.String(), "acme !")
	assert.Contains(t, text.String(), "(no tenant)")
	assert.Contains(t, mdown.String(), "| **acme** (dominates) | 12 | 85.7 % |")
	var html strings.Builder
	require.NoError(t, HTML(&html, r, nil))
	assert.Contains(t, html.String(), `id="tenants"`)
	assert.Contains(t, html.String(), "dominates")
	assert.Contains(t, html.String(), `<td class="lead">(no tenant)</td>`, "the HTML labels it as the text does")
}
