package breaker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agentdlq/agentdlq/breaker"
)

// TestBreakerLifecycle walks one dependency through open, half-open and the
// ramp on a clock, with the log and metric lines of each transition.
func TestBreakerLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := t0
	var logs, metrics bytes.Buffer
	b, err := breaker.New(breaker.Config{Pipeline: "agent-tasks", Store: breaker.NewMemory(), Settings: cfg,
		Logger: slog.New(slog.NewJSONHandler(&logs, nil)), Metrics: &metrics,
		Now: func() time.Time { return now }, Rand: func() float64 { return 0.5 }})
	if err != nil {
		t.Fatal(err)
	}
	for i := range cfg.Threshold {
		if d, _ := b.Admit(ctx, "search-api"); !d.Admit {
			t.Fatal("closed breaker deferred a task")
		}
		// Two tenants fail (min_tenants 2 by default).
		if err := b.Record(ctx, "search-api", []string{"acme", "globex"}[i%2], true, 0); err != nil {
			t.Fatal(err)
		}
	}
	d, err := b.Admit(ctx, "search-api")
	if err != nil || d.Admit || d.Mode != breaker.Open || d.Wait < cfg.OpenFor {
		t.Fatalf("after %d failures: %+v %v, want deferred at least %s", cfg.Threshold, d, err, cfg.OpenFor)
	}
	if d, _ := b.Admit(ctx, "mail-relay"); !d.Admit {
		t.Error("another dependency's tasks were deferred")
	}
	now = now.Add(cfg.OpenFor + 2*time.Second) // past the cache and OpenFor
	for i := range cfg.Probes {
		d, _ := b.Admit(ctx, "search-api")
		if !d.Admit || !d.Probe {
			t.Fatalf("probe %d not admitted: %+v", i, d)
		}
	}
	if d, _ := b.Admit(ctx, "search-api"); d.Admit {
		t.Fatalf("a task past the probes was admitted: %+v", d)
	}
	for range cfg.Probes {
		if err := b.Record(ctx, "search-api", "acme", false, 0); err != nil {
			t.Fatal(err)
		}
	}
	st, _ := b.Status(ctx, "search-api")
	if st.Mode != breaker.Closed || st.RampFrom.IsZero() {
		t.Fatalf("after the probes: %+v, want closed and ramping", st)
	}
	// The ramp: with a draw of 0.5, admitted from half the ramp on.
	if d, _ := b.Admit(ctx, "search-api"); d.Admit {
		t.Errorf("admitted at the ramp's start: %+v", d)
	}
	now = now.Add(cfg.Ramp/2 + time.Second)
	if d, _ := b.Admit(ctx, "search-api"); !d.Admit {
		t.Errorf("not admitted past half the ramp: %+v", d)
	}
	var tos []string
	for line := range strings.Lines(metrics.String()) {
		var m struct {
			To, Dependency     string
			BreakerOpened      int
			BreakerTransitions int
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		if m.Dependency != "search-api" || m.BreakerTransitions != 1 {
			t.Errorf("metric line %s", line)
		}
		tos = append(tos, m.To)
	}
	if got := strings.Join(tos, ","); got != "open,half_open,closed" {
		t.Errorf("transitions %s, want open,half_open,closed", got)
	}
	if n := strings.Count(logs.String(), `"dependency":"search-api"`); n != 3 {
		t.Errorf("%d transition log lines, want 3:\n%s", n, logs.String())
	}
}

// TestBreakerStoreDownAdmits: a breaker whose store fails admits the task
// and says why.
func TestBreakerStoreDownAdmits(t *testing.T) {
	t.Parallel()
	b, err := breaker.New(breaker.Config{Pipeline: "p", Store: failing{}, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Metrics: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	d, err := b.Admit(context.Background(), "d")
	if !d.Admit || err == nil {
		t.Errorf("Admit = %+v, %v; want admitted with the error", d, err)
	}
}

type failing struct{}

func (failing) Get(context.Context, string, string) (breaker.State, error) {
	return breaker.State{}, io.ErrUnexpectedEOF
}
func (failing) Put(context.Context, string, string, breaker.State) (breaker.State, error) {
	return breaker.State{}, io.ErrUnexpectedEOF
}

// TestBreakerContendedProbesDefer: a task that loses every compare-and-set
// for a half-open breaker's probes to other workers is deferred, not
// admitted as if the store were down: under a herd of workers the probes
// would otherwise be followed by every task that lost the race.
func TestBreakerContendedProbesDefer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	set := cfg
	set.Probes = 100
	mem := breaker.NewMemory()
	if _, err := mem.Put(ctx, "p", "d", breaker.State{Mode: breaker.HalfOpen, ProbeSince: t0}); err != nil {
		t.Fatal(err)
	}
	b, err := breaker.New(breaker.Config{Pipeline: "p", Store: rivals{mem}, Settings: set, Now: func() time.Time { return t0 },
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Metrics: io.Discard, Rand: func() float64 { return 0.5 }})
	if err != nil {
		t.Fatal(err)
	}
	d, err := b.Admit(ctx, "d")
	if d.Admit || d.Wait <= 0 {
		t.Errorf("Admit = %+v, %v; want deferred (the probes went to other workers)", d, err)
	}
	if st, _ := mem.Get(ctx, "p", "d"); st.Probes > set.Probes {
		t.Errorf("%d probes claimed, at most %d", st.Probes, set.Probes)
	}
}

// rivals is a Memory where another worker claims a probe just before each Put.
type rivals struct{ *breaker.Memory }

func (r rivals) Put(ctx context.Context, p, d string, s breaker.State) (breaker.State, error) {
	cur, _ := r.Memory.Get(ctx, p, d)
	cur.Probes++
	if _, err := r.Memory.Put(ctx, p, d, cur); err != nil {
		return breaker.State{}, err
	}
	return r.Memory.Put(ctx, p, d, s)
}
