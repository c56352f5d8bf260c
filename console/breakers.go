package console

import (
	"context"
	"slices"
	"time"

	"github.com/agentdlq/agentdlq/breaker"
	"github.com/agentdlq/agentdlq/pipeline"
)

// BreakerReader is what the console reads of the circuit breakers: a
// breaker store's Get and its list of dependencies (breaker.Lister).
// dynamostore.Store (agentdlq ui's, on the ledger table) and breaker.Memory
// are one. The console never writes a breaker: forcing one is the CLI's,
// gated (agentdlq breaker open|close).
type BreakerReader interface {
	Get(ctx context.Context, pipeline, dependency string) (breaker.State, error)
	breaker.Lister
}

// breakerTimeout bounds a page's reads of the breakers.
const breakerTimeout = 3 * time.Second

// breakerView is a pipeline's breakers as a page shows them.
type breakerView struct {
	Pipeline string
	Now      time.Time
	// Settings are the pipeline's breaker settings, defaults applied: the
	// window the failures are counted in and what opens a breaker.
	Settings breaker.Settings
	// Enabled: the pipeline's breaker is on (pipelines.json "breaker");
	// off, nothing is read and the page says "breaker off".
	Enabled bool
	// NoStore: the console was given no store (Config.Breakers).
	NoStore bool
	// Err: the list of dependencies could not be read.
	Err string
	// Rows: open first, then half-open, then closed, by name within each.
	Rows []breakerRow
	// NotClosed counts the rows open or half-open; Unread those whose
	// state could not be read; Failing the closed rows with failures in
	// the window (below what opens them, or one tenant's alone).
	NotClosed, Unread, Failing int
}

// breakerRow is one dependency's breaker.
type breakerRow struct {
	Dependency string
	Mode       breaker.Mode
	S          breaker.State
	// Failures: those of the last window at the view's Now (State.FailuresAt);
	// Tenants: the distinct tenants they came from (State.TenantsAt, at most
	// breaker.MaxTenants; 0 for a state stored before tenants were kept).
	Failures, Tenants int
	Err               string // its state could not be read
}

// TenantsText is Tenants in words (breaker.TenantsText).
func (r breakerRow) TenantsText() string { return breaker.TenantsText(r.Tenants) }

// Open and HalfOpen say which mode the row is in, for the templates.
func (r breakerRow) Open() bool     { return r.Mode == breaker.Open }
func (r breakerRow) HalfOpen() bool { return r.Mode == breaker.HalfOpen }

// breakers reads p's breakers: the list (one read), then each state (one
// read a dependency). A store that cannot be read is said in the view,
// never an error of the page.
func (s *Server) breakers(ctx context.Context, p *pipeline.Pipeline) *breakerView {
	v := &breakerView{Pipeline: p.Name, Now: s.cfg.Now(), Enabled: p.Breaker.Enabled, Settings: p.Breaker.Settings().WithDefaults()}
	if !v.Enabled {
		return v
	}
	if s.cfg.Breakers == nil {
		v.NoStore = true
		return v
	}
	ctx, cancel := context.WithTimeout(ctx, breakerTimeout)
	defer cancel()
	deps, err := s.cfg.Breakers.Dependencies(ctx, p.Name)
	if err != nil {
		v.Err = err.Error()
		s.log.WarnContext(ctx, "console: reading the breakers", "pipeline", p.Name, "error", v.Err)
		return v
	}
	for _, d := range deps {
		row := breakerRow{Dependency: d, Mode: breaker.Closed}
		st, err := s.cfg.Breakers.Get(ctx, p.Name, d)
		switch {
		case err != nil:
			row.Err = err.Error()
			v.Unread++
		case st.Mode != "":
			row.Mode, row.S = st.Mode, st
		default:
			row.S = st
		}
		row.Failures, row.Tenants = row.S.FailuresAt(v.Settings.Window, v.Now), row.S.TenantsAt(v.Settings.Window, v.Now)
		switch {
		case row.Err != "":
		case row.Mode != breaker.Closed:
			v.NotClosed++
		case row.Failures > 0:
			v.Failing++
		}
		v.Rows = append(v.Rows, row)
	}
	rank := map[breaker.Mode]int{breaker.Open: 0, breaker.HalfOpen: 1, breaker.Closed: 2}
	slices.SortStableFunc(v.Rows, func(a, b breakerRow) int {
		if a.Err != b.Err && (a.Err == "" || b.Err == "") { // an unread state first: it may be open
			if a.Err != "" {
				return -1
			}
			return 1
		}
		return rank[a.Mode] - rank[b.Mode]
	})
	return v
}
