package console

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/breaker"
	"github.com/agentdlq/agentdlq/breaker/dynamostore"
)

var _ BreakerReader = (*breaker.Memory)(nil)

// failingBreakers is a BreakerReader whose list, or one dependency's
// state, cannot be read.
type failingBreakers struct {
	*breaker.Memory
	list error
	get  map[string]error
}

func (f failingBreakers) Dependencies(ctx context.Context, p string) ([]string, error) {
	if f.list != nil {
		return nil, f.list
	}
	return f.Memory.Dependencies(ctx, p)
}

func (f failingBreakers) Get(ctx context.Context, p, d string) (breaker.State, error) {
	if err := f.get[d]; err != nil {
		return breaker.State{}, err
	}
	return f.Memory.Get(ctx, p, d)
}

// put stores s as dependency dep's first state.
func put(t *testing.T, m *breaker.Memory, dep string, s breaker.State) {
	t.Helper()
	_, err := m.Put(context.Background(), "agent-tasks", dep, s)
	require.NoError(t, err)
}

// The pipeline page and the overview show each dependency's breaker: open
// and half-open first and marked, who holds one open and why, until when;
// names and words from producers and owners are escaped.
func TestBreakersShown(t *testing.T) {
	f := newFixture(t, 8)
	f.p.Breaker.Enabled = true
	m := breaker.NewMemory()
	f.s.cfg.Breakers = m
	put(t, m, "a-closed", breaker.State{Failures: 2, WindowStart: t0.Add(-20 * time.Second)})
	put(t, m, "b-half", breaker.State{Mode: breaker.HalfOpen, Probes: 2, Passed: 1, ProbeSince: t0.Add(-5 * time.Second), Changed: t0.Add(-5 * time.Second), Cause: breaker.CauseProbing})
	put(t, m, "c-open", breaker.State{Mode: breaker.Open, Until: t0.Add(25 * time.Second), Changed: t0.Add(-5 * time.Second), Cause: breaker.CauseThreshold})
	put(t, m, `<img src=x onerror=alert(1)>`, breaker.State{Mode: breaker.Open, Held: true, Owner: "platform-oncall",
		Why: `INC-77 <script>alert(2)</script>`, Changed: t0.Add(-time.Minute), Cause: breaker.CauseForcedOpen})

	w := f.get(t, "/pipeline?p=agent-tasks")
	require.Equal(t, http.StatusOK, w.Code)
	page := w.Body.String()
	assert.Contains(t, page, "3 of 4 not closed.")
	assert.NotContains(t, page, "<img src=x")
	assert.NotContains(t, page, "<script>alert(2)")
	assert.Contains(t, page, "&lt;img src=x onerror=alert(1)&gt;")
	assert.Contains(t, page, "why: INC-77 &lt;script&gt;alert(2)&lt;/script&gt;")
	assert.Contains(t, page, "until the owner closes it")
	assert.Contains(t, page, "probing in 25s")
	assert.Contains(t, page, "2 probes admitted, 1 passed")
	assert.Contains(t, page, "2 failures in the last 1m0s") // of the default window, at the page's now
	// Open first (by name: the held one sorts before c-open), then half-open, then closed.
	order := []string{`data-dependency="&lt;img`, `data-dependency="c-open"`, `data-dependency="b-half"`, `data-dependency="a-closed"`}
	last := -1
	for _, o := range order {
		i := strings.Index(page, o)
		require.Greater(t, i, last, "%s after the rows before it", o)
		last = i
	}
	assert.Contains(t, page, `<tr class="brk-open" data-dependency="c-open">`)
	assert.Contains(t, page, `<tr class="brk-half_open" data-dependency="b-half">`)

	over := f.get(t, "/").Body.String()
	assert.Contains(t, over, `id="breakers-agent-tasks"`)
	assert.Contains(t, over, "c-open: open")
	assert.Contains(t, over, "&lt;img src=x onerror=alert(1)&gt;: open (held)")
	assert.Contains(t, over, "b-half: half_open")
	assert.NotContains(t, over, "a-closed", "the overview names only what is not closed")
}

// A closed breaker's row says how many tenants its window's failures came
// from and what opens it: one tenant's failures (its revoked key) keep it
// closed under min_tenants 2, and the owner sees why.
func TestBreakerTenantsShown(t *testing.T) {
	f := newFixture(t, 8)
	f.p.Breaker.Enabled = true
	set := f.p.Breaker.Settings().WithDefaults()
	m := breaker.NewMemory()
	f.s.cfg.Breakers = m
	var one, three breaker.State
	for i := range 7 {
		at := t0.Add(time.Duration(i-7) * time.Second)
		var moved *breaker.Transition
		one, _, moved = breaker.Fail(one, set, at, "acme", 0)
		require.Nil(t, moved, "one tenant's failures never open it (min_tenants %d)", set.MinTenants)
		if i < 3 {
			three, _, _ = breaker.Fail(three, set, at, []string{"acme", "globex", "initech"}[i], 0)
		}
	}
	put(t, m, "crm", one)
	put(t, m, "search-api", three)

	page := f.get(t, "/pipeline?p=agent-tasks").Body.String()
	assert.Contains(t, page, "7 failures in the last 1m0s, from 1 tenant<")
	assert.Contains(t, page, "3 failures in the last 1m0s, from 3 tenants<")
	assert.Contains(t, page, "opens at 5 from 2 tenants")
	assert.Contains(t, page, "Every breaker closed: tasks flow. 2 dependencies are failing below what opens a breaker")
}

// Off, none stored, no store, a store that cannot be read: each said in
// words; the page still renders.
func TestBreakersStates(t *testing.T) {
	cases := []struct {
		name     string
		enabled  bool
		store    func(*breaker.Memory) BreakerReader
		page     []string // want on the pipeline page
		overview string   // want on the overview ("": no breaker line)
	}{
		{name: "off", page: []string{`id="breaker-off">breaker off</span>`}},
		{name: "no store", enabled: true, page: []string{"The circuit breakers are not read here"}},
		{name: "none stored", enabled: true, store: func(m *breaker.Memory) BreakerReader { return m },
			page: []string{"Circuit breakers: every one closed."}},
		{name: "list unreadable", enabled: true, store: func(m *breaker.Memory) BreakerReader {
			return failingBreakers{Memory: m, list: errors.New("AccessDeniedException: dynamodb:GetItem")}
		}, page: []string{"The circuit breakers could not be read:</b> AccessDeniedException: dynamodb:GetItem"}, overview: "breakers: could not be read"},
		{name: "one state unreadable", enabled: true, store: func(m *breaker.Memory) BreakerReader {
			put(t, m, "search-api", breaker.State{Failures: 1})
			put(t, m, "crm", breaker.State{Failures: 1})
			return failingBreakers{Memory: m, get: map[string]error{"search-api": errors.New("throttled")}}
		}, page: []string{"1 breaker state could not be read:", `<tr class="brk-unread" data-dependency="search-api">`, `<tr class="brk-closed" data-dependency="crm">`},
			overview: "search-api: unread"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, 8)
			f.p.Breaker.Enabled = c.enabled
			if c.store != nil {
				f.s.cfg.Breakers = c.store(breaker.NewMemory())
			}
			w := f.get(t, "/pipeline?p=agent-tasks")
			require.Equal(t, http.StatusOK, w.Code)
			for _, want := range c.page {
				assert.Contains(t, w.Body.String(), want)
			}
			assert.Contains(t, w.Body.String(), `id="reason-budget_exhausted"`, "the rest of the page is there")
			assert.NotContains(t, w.Body.String(), "not closed.")
			over := f.get(t, "/")
			require.Equal(t, http.StatusOK, over.Code)
			if c.overview == "" {
				assert.NotContains(t, over.Body.String(), `id="breakers-agent-tasks"`)
			} else {
				assert.Contains(t, over.Body.String(), c.overview)
			}
		})
	}
}

var _ BreakerReader = (*dynamostore.Store)(nil)

// A pipeline never triaged still shows its breakers, under the notice
// that no report is kept.
func TestBreakersWithoutAReport(t *testing.T) {
	f := newFixture(t, 8)
	f.p.Breaker.Enabled = true
	m := breaker.NewMemory()
	f.s.cfg.Breakers = m
	put(t, m, "search-api", breaker.State{Mode: breaker.Open, Until: t0.Add(time.Minute), Changed: t0, Cause: breaker.CauseThreshold})
	f.s.snaps[f.p.Name] = newSnapshot(nil, "", nil)
	w := f.get(t, "/pipeline?p=agent-tasks")
	require.Equal(t, http.StatusOK, w.Code)
	assert.Contains(t, w.Body.String(), "No triage report of this pipeline is kept yet.")
	assert.Contains(t, w.Body.String(), `<tr class="brk-open" data-dependency="search-api">`)
}
