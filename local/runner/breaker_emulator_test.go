package runner_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/agentdlq/agentdlq/breaker"
	"github.com/agentdlq/agentdlq/breaker/dynamostore"
	"github.com/agentdlq/agentdlq/functions/sampleworker"
	"github.com/agentdlq/agentdlq/local/runner"
	"github.com/agentdlq/agentdlq/local/topology"
	"github.com/agentdlq/agentdlq/local/workload"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/testkit/localtest"
	"github.com/agentdlq/agentdlq/triage"
)

// TestBreakerDefersWithoutSpendingReceives runs the real worker under the
// local event source mapping on the emulators, search-api down for longer
// than max_receive_count receives could ride out (3 receives, each hidden
// at most 2 s by the backoff), with tasks that need it and tasks that do
// not. With the breaker on, no task is dead-lettered, each task that
// needs search-api spends at most 2 receives of its budget, and the
// breaker's item in the ledger table opened and closed again. Off, the
// same outage dead-letters them as dependency_open (the control).
func TestBreakerDefersWithoutSpendingReceives(t *testing.T) {
	t.Parallel()
	cfg := localtest.AWS(t)
	for _, tt := range []struct {
		name    string
		breaker bool
	}{{"breaker on", true}, {"breaker off", false}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			p := &pipeline.Pipeline{Name: "brk-" + localtest.Unique("")[:8], Owner: "o", MaxReceiveCount: 3,
				WorkerTimeoutSeconds: 5, VisibilityTimeoutSeconds: 30, Backoff: pipeline.Backoff{BaseSeconds: 1, MaxSeconds: 2}}
			if tt.breaker {
				p.Breaker = pipeline.Breaker{Enabled: true, Threshold: 3, WindowSeconds: 10, OpenSeconds: 4, Probes: 1, RampSeconds: 2, ToleranceSeconds: 30}
				p.RetryAfterRequeues = 40
			}
			p.ApplyDefaults()
			if err := p.Validate(); err != nil {
				t.Fatal(err)
			}
			deps := sampleworker.DependencyDir{Dir: t.TempDir()}
			if err := deps.Set("search-api", true); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			spent := map[string]int{} // key -> receives spent when done
			table := localtest.Table(t, cfg)
			l, err := runner.Setup(ctx, runner.Config{AWS: cfg, Pipeline: p, Table: table, Dependencies: deps,
				Names: topology.Names{Hot: p.Name, DLQ: p.Name + "-dlq"}, Concurrency: 4,
				Observe: func(_, key string, receives int, err error) {
					if err == nil {
						mu.Lock()
						spent[key] = receives
						mu.Unlock()
					}
				}})
			if err != nil {
				t.Fatal(err)
			}
			var tasks []workload.Task
			for i := range 12 {
				k := workload.OK
				if i%2 == 0 {
					k = workload.DependencyOpen
				}
				tasks = append(tasks, workload.Make(p.Name, i, k, -1))
			}
			if _, err := l.Send(ctx, tasks, 2); err != nil {
				t.Fatal(err)
			}
			m, _, err := l.Mapping(runner.DrainOptions{Pollers: 2, IdleTimeout: 15 * time.Second}, true)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { _, err := m.Run(ctx); done <- err }()
			// The outage outlasts three counted receives (backoff at most 2 s).
			time.Sleep(12 * time.Second)
			if err := deps.Set("search-api", false); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			dead, err := l.DeadLetters(ctx, triage.ScanOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !tt.breaker {
				if len(dead) == 0 {
					t.Fatal("without the breaker the outage dead-lettered nothing: the test does not outlast the budget")
				}
				return
			}
			if len(dead) != 0 {
				t.Fatalf("%d tasks dead-lettered with the breaker on, want 0", len(dead))
			}
			mu.Lock()
			defer mu.Unlock()
			for _, task := range tasks {
				n, ok := spent[task.Key]
				switch {
				case !ok:
					t.Errorf("%s (%s) never done", task.Key, task.Kind)
				case task.Kind == workload.DependencyOpen && n > 2:
					t.Errorf("%s spent %d receives, want at most 2", task.Key, n)
				}
			}
			st, err := dynamostore.New(dynamodb.NewFromConfig(cfg), table).Get(ctx, p.Name, "search-api")
			if err != nil || st.Mode != breaker.Closed || st.Version < 3 {
				t.Errorf("breaker item %+v (%v): want closed again after open and half-open", st, err)
			}
		})
	}
}
