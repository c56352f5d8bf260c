package stack

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/pipeline"
)

// TestSLO: each pipeline has a request-based dead-letter SLO on the
// worker's metrics (good Processed, bad DeadLettered), its target the
// pipeline's slo.target_percent over 30 rolling days, with the burn-rate
// windows its alarms read.
func TestSLO(t *testing.T) {
	each(t, func(t *testing.T, s *synthesized, def pipeline.Pipeline) {
		withDefaults := def
		withDefaults.ApplyDefaults()
		id, r := s.resourceOf(t, "AWS::ApplicationSignals::ServiceLevelObjective", def.Name, "")
		p := props(r)
		name := flat(p["Name"])
		assert.True(t, strings.HasSuffix(name, "-dead-letters"), name)
		assert.LessOrEqual(t, len(name), 128)
		assert.Regexp(t, `^[0-9A-Za-z][-._0-9A-Za-z ]{0,126}[0-9A-Za-z]$`, name, "Application Signals' pattern of an SLO name")

		goal := p["Goal"].(map[string]any)
		assert.Equal(t, withDefaults.SLO.TargetPercent, goal["AttainmentGoal"])
		assert.Equal(t, map[string]any{"RollingInterval": map[string]any{"Duration": float64(30), "DurationUnit": "DAY"}}, goal["Interval"])

		m := p["RequestBasedSli"].(map[string]any)["RequestBasedSliMetric"].(map[string]any)
		stat := func(q any) (string, string) {
			ms := q.(map[string]any)["MetricStat"].(map[string]any)
			metric := ms["Metric"].(map[string]any)
			dims := metric["Dimensions"].([]any)
			require.Len(t, dims, 1)
			assert.Equal(t, map[string]any{"Name": "Pipeline", "Value": def.Name}, dims[0])
			assert.Equal(t, "Sum", ms["Stat"])
			return metric["Namespace"].(string), metric["MetricName"].(string)
		}
		bad := m["MonitoredRequestCountMetric"].(map[string]any)["BadCountMetric"].([]any)
		require.Len(t, bad, 1)
		ns, metric := stat(bad[0])
		assert.Equal(t, [2]string{"AgentDLQ", "DeadLettered"}, [2]string{ns, metric}, "bad: dead-lettered")
		assert.Equal(t, true, bad[0].(map[string]any)["ReturnData"])
		total := m["TotalRequestCountMetric"].([]any)
		var names []string
		var returned []string
		for _, q := range total {
			qm := q.(map[string]any)
			if e, ok := qm["Expression"].(string); ok {
				assert.Equal(t, "FILL(processed, 0) + FILL(deadlettered, 0)", e)
			} else {
				_, n := stat(q)
				names = append(names, n)
			}
			if qm["ReturnData"] == true {
				returned = append(returned, qm["Id"].(string))
			}
		}
		assert.ElementsMatch(t, []string{"Processed", "DeadLettered"}, names, "total: processed and dead-lettered")
		assert.Equal(t, []string{"total"}, returned, "one query returns the total")

		var windows []float64
		for _, w := range p["BurnRateConfigurations"].([]any) {
			windows = append(windows, w.(map[string]any)["LookBackWindowMinutes"].(float64))
		}
		assert.Equal(t, []float64{60, 5, 360, 30}, windows)

		// The burn-rate alarms read the SLO's BurnRate by its name and
		// window, and wait for the SLO.
		for _, b := range burnAlarms {
			a := s.alarmOf(t, def, b.anchor)
			assert.Equal(t, b.threshold, a["Threshold"])
			assert.Equal(t, "GreaterThanOrEqualToThreshold", a["ComparisonOperator"])
			got := map[string]string{}
			for _, q := range a["Metrics"].([]any) {
				qm := q.(map[string]any)
				if e, ok := qm["Expression"].(string); ok {
					assert.Equal(t, "MIN([long, short])", e)
					continue
				}
				ms := qm["MetricStat"].(map[string]any)["Metric"].(map[string]any)
				assert.Equal(t, "AWS/ApplicationSignals", ms["Namespace"])
				assert.Equal(t, "BurnRate", ms["MetricName"])
				dims := map[string]string{}
				for _, d := range ms["Dimensions"].([]any) {
					dims[d.(map[string]any)["Name"].(string)] = flat(d.(map[string]any)["Value"])
				}
				assert.Equal(t, name, dims["SloName"])
				got[qm["Id"].(string)] = dims["BurnRateWindowMinutes"]
			}
			assert.Equal(t, map[string]string{"long": fmt.Sprint(b.long), "short": fmt.Sprint(b.short)}, got, b.anchor)
		}
		alarmIDs, alarms := s.resources("AWS::CloudWatch::Alarm")
		waits := 0
		for _, aid := range alarmIDs {
			deps, _ := json.Marshal(alarms[aid]["DependsOn"])
			if strings.Contains(string(deps), `"`+id+`"`) {
				waits++
			}
		}
		assert.Equal(t, len(burnAlarms), waits, "the burn-rate alarms depend on the SLO")

		// The dashboard shows the burn rates against the alarms, and the
		// SLI's good and bad tasks.
		dids, ds := s.resources("AWS::CloudWatch::Dashboard")
		var body string
		for _, did := range dids {
			if b := flat(props(ds[did])["DashboardBody"]); strings.Contains(b, "agentdlq · "+def.Name+" ") {
				body = b
			}
		}
		var parsed map[string]any
		require.NoError(t, json.Unmarshal([]byte(body), &parsed))
		byTitle := widgets(t, parsed)
		burn := byTitle[fmt.Sprintf("%s (target %g %% over 30 days)", GraphSLOBurnRate, withDefaults.SLO.TargetPercent)]
		require.NotEmpty(t, burn, "the burn-rate graph")
		for _, w := range SLOBurnRateWindows() {
			assert.Contains(t, burn, fmt.Sprintf(`"AWS/ApplicationSignals","BurnRate","BurnRateWindowMinutes","%d","SloName","%s"`, w, name))
		}
		for _, b := range burnAlarms {
			assert.Contains(t, burn, fmt.Sprintf(`"value":%g`, b.threshold))
		}
		events := byTitle[GraphSLOEvents]
		assert.Contains(t, events, `"AgentDLQ","DeadLettered","Pipeline","`+def.Name+`"`)
		assert.Contains(t, events, `"AgentDLQ","Processed","Pipeline","`+def.Name+`"`)
	})
}

// TestSLOTargetFromTheDefinition: the target is the definition's.
func TestSLOTargetFromTheDefinition(t *testing.T) {
	require.True(t, fx.synthOK)
	found := false
	for _, name := range allStacks {
		s := fx.stacks[name]
		for _, def := range s.defs {
			if def.SLO.TargetPercent != 0 && def.SLO.TargetPercent != pipeline.DefaultSLOTargetPercent {
				found = true
				jsiiCheck(t, name+" "+def.Name, func() {
					s.assert.HasResourceProperties(jsii.String("AWS::ApplicationSignals::ServiceLevelObjective"), like(map[string]any{
						"Goal": map[string]any{"AttainmentGoal": def.SLO.TargetPercent},
					}))
				})
			}
		}
	}
	assert.True(t, found, "a pipeline of the fixture sets its own slo.target_percent")
}
