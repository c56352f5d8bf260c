package triage

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/triage/dlq"
	"github.com/agentdlq/agentdlq/triage/internal/filtering"
	"github.com/agentdlq/agentdlq/triage/report"
)

// filterLetters are four dead letters that differ in tool, tenant, time and error.
func filterLetters(t *testing.T) []dlq.Tagged {
	t.Helper()
	m := func(id, tool, tenant, errText string, at time.Time) dlq.Message {
		meta := poisonMeta(deadletter.ReasonSchemaInvalid, tool, "1", tenant, "key-"+id, errText)
		meta.ErrorCode = "field:args"
		return deadLetter(t, id, task(id, tenant, tool, "1", `{}`), meta, at)
	}
	return tagAll([]dlq.Message{
		m("a", "web.search", "acme", "schema_invalid: args: query is missing", t0.Add(-3*time.Hour)),
		m("b", "web.search", "globex", "schema_invalid: args: max_results is not an integer", t0.Add(-30*time.Minute)),
		m("c", "email.send", "acme", "schema_invalid: args: To is empty", t0.Add(-10*time.Minute)),
		brokerMoved("d", task("d", "acme", "http.fetch", "1", `{}`), t0.Add(-5*time.Minute)),
	}, nil)
}

func messageIDs(ts []dlq.Tagged) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.MessageID)
	}
	return out
}

func TestFilterMatch(t *testing.T) {
	t.Parallel()
	all := filterLetters(t)
	tests := []struct {
		name string
		f    dlq.Filter
		want []string
	}{
		{"zero matches all", dlq.Filter{}, []string{"a", "b", "c", "d"}},
		{"tool, from the metadata or the body", dlq.Filter{Tool: "web.search"}, []string{"a", "b"}},
		{"tool of a letter the broker moved (body hints)", dlq.Filter{Tool: "http.fetch"}, []string{"d"}},
		{"tenant", dlq.Filter{Tenant: "acme"}, []string{"a", "c", "d"}},
		{"tenant hashed as reports show it", dlq.Filter{Tenant: HashValue("globex")}, []string{"b"}},
		{"since (inclusive)", dlq.Filter{Since: t0.Add(-30 * time.Minute)}, []string{"b", "c", "d"}},
		{"until (exclusive)", dlq.Filter{Until: t0.Add(-30 * time.Minute)}, []string{"a"}},
		{"window", dlq.Filter{Since: t0.Add(-time.Hour), Until: t0.Add(-7 * time.Minute)}, []string{"b", "c"}},
		{"contains, case-insensitive, in the error", dlq.Filter{Contains: "MAX_RESULTS"}, []string{"b"}},
		{"contains in the error code", dlq.Filter{Contains: "field:args"}, []string{"a", "b", "c"}},
		{"every field must match", dlq.Filter{Tool: "web.search", Tenant: "acme", Contains: "query"}, []string{"a"}},
		{"nothing", dlq.Filter{Tool: "web.search", Tenant: "nobody"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, messageIDs(filterTagged(all, tt.f)))
		})
	}
}

func TestParseFilter(t *testing.T) {
	t.Parallel()
	f, err := ParseFilter(" web.search ", "acme", "2h", "2026-11-29T11:30:00Z", "timeout", t0)
	require.NoError(t, err)
	assert.Equal(t, dlq.Filter{Tool: "web.search", Tenant: "acme", Since: t0.Add(-2 * time.Hour), Until: t0.Add(-30 * time.Minute), Contains: "timeout"}, f)
	assert.Equal(t, "tool=web.search tenant=acme since=2026-11-29T10:00:00Z until=2026-11-29T11:30:00Z contains=timeout", f.String())
	assert.Equal(t, map[string]string{"tool": "web.search", "tenant": "acme", "since": "2026-11-29T10:00:00Z", "until": "2026-11-29T11:30:00Z", "contains": "timeout"}, f.Fields())
	// A field added to Filter is named in the one list String, the CLI's
	// flags and the console's form go by.
	assert.Equal(t, reflect.TypeFor[dlq.Filter]().NumField(), len(dlq.FilterFields))
	for _, k := range dlq.FilterFields {
		assert.Contains(t, f.Fields(), k)
	}

	d, err := parseWhen("7d", t0)
	require.NoError(t, err)
	assert.Equal(t, t0.Add(-7*24*time.Hour), d)
	d, err = parseWhen("1d12h", t0)
	require.NoError(t, err)
	assert.Equal(t, t0.Add(-36*time.Hour), d)

	for _, bad := range []struct{ since, until, field string }{
		{"yesterday", "", "since"}, {"", "-2h", "until"}, {"1h", "2h", ""}, {"x7d", "", "since"}, {"0s", "", "since"}, {"1h", "soon", "until"},
	} {
		_, err := ParseFilter("", "", bad.since, bad.until, "", t0)
		require.Error(t, err, bad)
		assert.True(t, errors.Is(err, filtering.ErrBadFilter), "%v: %v", bad, err)
		// The field whose value does not parse is named by the error's
		// type, as the message names it; an empty window names none.
		var fe *FilterFieldError
		if bad.field == "" {
			assert.False(t, errors.As(err, &fe), "%v: %v", bad, err)
			continue
		}
		require.ErrorAs(t, err, &fe, bad)
		assert.Equal(t, bad.field, fe.Field)
		assert.True(t, strings.HasPrefix(err.Error(), bad.field+": bad filter: "), err.Error())
	}
	q, err := ParseFilter("", "", "", "", `say "hi"`, t0)
	require.NoError(t, err)
	assert.Equal(t, `contains="say \"hi\""`, q.String())
}

func TestRunWithAFilter(t *testing.T) {
	t.Parallel()
	clock := newClock()
	f := newFakeSQS(t, clock, fixture(t))
	before := snapshot(f)
	p := testPipeline(t, false)
	full, err := Run(t.Context(), Config{Pipeline: p, DLQURL: "http://q/agent-tasks-dlq", SQS: f, Now: clock.Now, Logger: quiet})
	require.NoError(t, err)
	tool := full.Groups[0].Tool
	require.NotEmpty(t, tool)
	want := 0
	for _, g := range full.Groups {
		for _, l := range g.Letters {
			if l.Hints.Tool == tool {
				want++
			}
		}
	}
	require.Less(t, want, full.Totals.Messages, "the fixture holds letters of other tools")

	r, err := Run(t.Context(), Config{Pipeline: p, DLQURL: "http://q/agent-tasks-dlq", SQS: f, Now: clock.Now, Logger: quiet, Filter: dlq.Filter{Tool: tool}})
	require.NoError(t, err)
	require.NotNil(t, r.Filter)
	assert.Equal(t, want, r.Totals.Messages)
	assert.Equal(t, dlq.Filtered{Filter: dlq.Filter{Tool: tool}, Scanned: full.Totals.Messages, Matched: want}, *r.Filter)
	for _, g := range r.Groups {
		assert.Equal(t, tool, g.Tool)
	}
	assert.Equal(t, before, snapshot(f), "a filtered triage changes nothing either")

	// Narrow gives the same report from the full one.
	n, err := Narrow(full, p, dlq.Filter{Tool: tool})
	require.NoError(t, err)
	assert.Equal(t, r.Totals, n.Totals)
	assert.Equal(t, r.Filter, n.Filter)
	assert.Nil(t, full.Filter, "Narrow never changes the report it narrows")

	// A filtered run keeps and exports nothing: refused before any receive.
	_, err = Run(t.Context(), Config{Pipeline: p, DLQURL: "http://q/agent-tasks-dlq", SQS: f, Export: refuseExport{t}, Now: clock.Now, Logger: quiet, Filter: dlq.Filter{Tool: tool}})
	require.ErrorIs(t, err, ErrBadOptions)
	_, err = Run(t.Context(), Config{Pipeline: p, DLQURL: "http://q/agent-tasks-dlq", SQS: f, Now: clock.Now, Logger: quiet, Filter: dlq.Filter{Since: t0, Until: t0}})
	require.ErrorIs(t, err, ErrBadOptions)
}

func TestNarrowNeedsTheLetters(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, false)
	r := Build(filterLetters(t), p, t0)
	back := *r
	back.Groups = append([]report.Group(nil), r.Groups...)
	for i := range back.Groups {
		back.Groups[i].Letters = nil // as read back from storage
	}
	_, err := Narrow(&back, p, dlq.Filter{Tool: "web.search"})
	require.ErrorIs(t, err, errNoLetters)
	same, err := Narrow(&back, p, dlq.Filter{})
	require.NoError(t, err)
	assert.Same(t, &back, same)
	n, err := Narrow(r, p, dlq.Filter{Tenant: "acme", Since: t0.Add(-time.Hour)})
	require.NoError(t, err)
	assert.Equal(t, 2, n.Totals.Messages)
	assert.Equal(t, "tenant=acme since=2026-11-29T11:00:00Z: 2 of 4 dead letters seen", n.Filter.Summary())
}

// refuseExport fails the test when a run exports.
type refuseExport struct{ t *testing.T }

func (e refuseExport) Export(context.Context, *report.Report, *pipeline.Pipeline, time.Time) (*report.ExportResult, error) {
	e.t.Error("a filtered run exported")
	return nil, nil
}
