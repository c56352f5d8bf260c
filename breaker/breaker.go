package breaker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"time"
)

// Config configures a Breaker. New applies the defaults, then validates.
type Config struct {
	// Pipeline is required: the pipeline whose dependencies it guards (the
	// store's key and the metrics' Pipeline dimension).
	Pipeline string
	// Store is required: where the state is shared (Memory, dynamostore.Store).
	Store Store
	// Settings is optional (defaults: Settings.WithDefaults).
	Settings Settings
	// Refresh is optional (default 1 s): how long a state read from the
	// store is used for admissions before it is read again. Writes always
	// compare-and-set on the stored version.
	Refresh time.Duration
	// Logger is optional (default slog.Default()): one line per transition.
	Logger *slog.Logger
	// Metrics is optional (default os.Stdout): one embedded-metric-format
	// line per transition. io.Discard silences them.
	Metrics io.Writer
	// Now is optional (default time.Now).
	Now func() time.Time
	// Rand is optional (default math/rand/v2.Float64): a value in [0, 1);
	// safe for concurrent use.
	Rand func() float64
}

// Breaker runs the decisions of this package against a Store. It is safe
// for concurrent use.
type Breaker struct {
	cfg   Config
	mu    sync.Mutex
	cache map[string]cached
	outMu sync.Mutex
}

type cached struct {
	s  State
	at time.Time
}

// ErrConfig is wrapped by New's errors.
var ErrConfig = errors.New("breaker: invalid config")

// New builds a Breaker.
func New(cfg Config) (*Breaker, error) {
	cfg.Settings = cfg.Settings.WithDefaults()
	if cfg.Refresh == 0 {
		cfg.Refresh = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = os.Stdout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Float64
	}
	var errs []error
	if cfg.Pipeline == "" {
		errs = append(errs, fmt.Errorf("%w: Pipeline is required", ErrConfig))
	}
	if cfg.Store == nil {
		errs = append(errs, fmt.Errorf("%w: Store is required", ErrConfig))
	}
	if cfg.Refresh < 0 {
		errs = append(errs, fmt.Errorf("%w: Refresh %s is negative", ErrConfig, cfg.Refresh))
	}
	if err := cfg.Settings.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &Breaker{cfg: cfg, cache: map[string]cached{}}, nil
}

// Settings returns the settings in force (with the defaults).
func (b *Breaker) Settings() Settings { return b.cfg.Settings }

// maxTries bounds the compare-and-set retries of one change.
const maxTries = 8

// state returns the dependency's state, from the cache while it is fresh.
func (b *Breaker) state(ctx context.Context, dep string, fresh bool) (State, error) {
	now := b.cfg.Now()
	if !fresh {
		b.mu.Lock()
		c, ok := b.cache[dep]
		b.mu.Unlock()
		if ok && now.Sub(c.at) < b.cfg.Refresh {
			return c.s, nil
		}
	}
	s, err := b.cfg.Store.Get(ctx, b.cfg.Pipeline, dep)
	if err != nil {
		return State{}, err
	}
	b.remember(dep, s, now)
	return s, nil
}

func (b *Breaker) remember(dep string, s State, at time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c, ok := b.cache[dep]; ok && c.s.Version > s.Version {
		return
	}
	b.cache[dep] = cached{s: s, at: at}
}

// change applies step to the dependency's state and writes the result when
// step says so, re-reading and re-applying on a conflict.
func (b *Breaker) change(ctx context.Context, dep string, step func(State, time.Time) (State, bool, *Transition)) (State, *Transition, error) {
	fresh := false
	for range maxTries {
		s, err := b.state(ctx, dep, fresh)
		if err != nil {
			return State{}, nil, err
		}
		now := b.cfg.Now()
		next, write, t := step(s, now)
		if !write {
			return next, nil, nil
		}
		stored, err := b.cfg.Store.Put(ctx, b.cfg.Pipeline, dep, next)
		if errors.Is(err, ErrConflict) {
			fresh = true
			continue
		}
		if err != nil {
			return State{}, nil, err
		}
		b.remember(dep, stored, now)
		if t != nil {
			b.audit(ctx, dep, stored, t)
		}
		return stored, t, nil
	}
	return State{}, nil, fmt.Errorf("breaker %s/%s: %w %d times", b.cfg.Pipeline, dep, ErrConflict, maxTries)
}

// Admit decides about one task that needs dep. On a store error the task is
// admitted (a breaker that cannot be read must not stop the pipeline) and
// the error returned beside the decision for the caller to log. A task
// that loses every compare-and-set (Admit writes only to start probing or
// to claim a probe: other workers took them) is deferred as half-open
// defers, without error: admitting it would send the herd behind the
// probes.
func (b *Breaker) Admit(ctx context.Context, dep string) (Decision, error) {
	var d Decision
	r := b.cfg.Rand()
	_, _, err := b.change(ctx, dep, func(s State, now time.Time) (State, bool, *Transition) {
		var next State
		var write bool
		var t *Transition
		d, next, write, t = Admit(s, b.cfg.Settings, now, r)
		return next, write, t
	})
	if errors.Is(err, ErrConflict) {
		return Decision{Wait: halfOpenWait(b.cfg.Settings, r), Mode: HalfOpen}, nil
	}
	if err != nil {
		return Decision{Admit: true, Mode: Closed}, err
	}
	return d, nil
}

// Deferral says whether a task that needs dep and has just failed should be
// deferred, and for how long (the package's Deferral, on the state this
// process last read or wrote). It writes nothing and claims no probe, so a
// task that already failed never takes a probe's place.
func (b *Breaker) Deferral(ctx context.Context, dep string) (time.Duration, bool, error) {
	s, err := b.state(ctx, dep, false)
	if err != nil {
		return 0, false, err
	}
	w, ok := Deferral(s, b.cfg.Settings, b.cfg.Now(), b.cfg.Rand())
	return w, ok, nil
}

// Record reports the result of a call to dep by a task of tenant (""
// when it names none): failed (a dependency failure: dependency_open,
// rate_limited, auth_config, or a Retry-After) with the provider's
// retryAfter, or a success. Other failures of a task (poison, a bug) are
// not the dependency's and are not recorded. The breaker opens on the
// failures of at least Settings.MinTenants tenants (Fail); it keeps a
// short hash of the tenant, never the tenant.
func (b *Breaker) Record(ctx context.Context, dep, tenant string, failed bool, retryAfter time.Duration) error {
	if failed {
		_, _, err := b.change(ctx, dep, func(s State, now time.Time) (State, bool, *Transition) {
			return Fail(s, b.cfg.Settings, now, tenant, retryAfter)
		})
		return err
	}
	_, _, err := b.change(ctx, dep, func(s State, now time.Time) (State, bool, *Transition) {
		return Succeed(s, b.cfg.Settings, now)
	})
	return err
}

// FailingTenants returns the distinct tenants whose failures of dep are in
// the window (State.TenantsAt, at most MaxTenants), on the state this
// process last read or wrote: after Record, the state it wrote.
func (b *Breaker) FailingTenants(ctx context.Context, dep string) (int, error) {
	s, err := b.state(ctx, dep, false)
	if err != nil {
		return 0, err
	}
	return s.TenantsAt(b.cfg.Settings.Window, b.cfg.Now()), nil
}

// RetryDeferral is the package's RetryDeferral for a task of tenant that
// needs dep, on the state this process last read or wrote (after Record:
// the state it wrote). It writes nothing.
func (b *Breaker) RetryDeferral(ctx context.Context, dep, tenant string) (time.Duration, bool, error) {
	s, err := b.state(ctx, dep, false)
	if err != nil {
		return 0, false, err
	}
	w, ok := RetryDeferral(s, b.cfg.Settings, b.cfg.Now(), tenant, b.cfg.Rand())
	return w, ok, nil
}

// Status returns the dependency's state as stored (not cached).
func (b *Breaker) Status(ctx context.Context, dep string) (State, error) {
	return b.state(ctx, dep, true)
}

// Force holds the breaker open (open) or closes it, as the owner asked.
func (b *Breaker) Force(ctx context.Context, dep string, open bool, owner, why string) (State, *Transition, error) {
	return b.change(ctx, dep, func(s State, now time.Time) (State, bool, *Transition) {
		next, t := Force(s, b.cfg.Settings, open, owner, why, now)
		return next, true, t
	})
}

// Metric names, in the AgentDLQ namespace.
const (
	MetricNamespace   = "AgentDLQ"
	MetricTransitions = "BreakerTransitions"
	MetricOpened      = "BreakerOpened"
)

// audit logs a transition and writes its EMF line: BreakerTransitions by
// Pipeline, Dependency and To; BreakerOpened (1 on a move to open) by
// Pipeline and by Pipeline and Dependency, which the construct alarms on.
func (b *Breaker) audit(ctx context.Context, dep string, s State, t *Transition) {
	level := slog.LevelWarn
	if t.To == Closed {
		level = slog.LevelInfo
	}
	b.cfg.Logger.LogAttrs(ctx, level, "breaker "+string(t.To),
		slog.String("pipeline", b.cfg.Pipeline), slog.String("dependency", dep),
		slog.String("from", string(t.From)), slog.String("to", string(t.To)), slog.String("cause", t.Cause),
		slog.Int("failures", t.Failures), slog.Int("tenants", t.Tenants), slog.String("tenant_hash", t.Tenant), slog.Time("until", s.Until), slog.Int64("version", s.Version),
		slog.String("owner", s.Owner), slog.String("why", s.Why))
	opened := 0
	if t.To == Open {
		opened = 1
	}
	doc := map[string]any{
		"_aws": map[string]any{
			"Timestamp": b.cfg.Now().UnixMilli(),
			"CloudWatchMetrics": []map[string]any{{
				"Namespace":  MetricNamespace,
				"Dimensions": [][]string{{"Pipeline"}, {"Pipeline", "Dependency"}, {"Pipeline", "Dependency", "To"}},
				"Metrics":    []map[string]string{{"Name": MetricTransitions, "Unit": "Count"}, {"Name": MetricOpened, "Unit": "Count"}},
			}},
		},
		"Pipeline": b.cfg.Pipeline, "Dependency": dep, "To": string(t.To), "Cause": t.Cause,
		MetricTransitions: 1, MetricOpened: opened,
	}
	line, err := json.Marshal(doc)
	if err != nil {
		return
	}
	b.outMu.Lock()
	defer b.outMu.Unlock()
	_, _ = b.cfg.Metrics.Write(append(line, '\n'))
}
