package breaker_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/agentdlq/agentdlq/breaker"
)

// A dependency fails three times, for two tenants: its breaker opens, and a task that needs
// it is deferred until probing may start; another dependency is untouched.
func ExampleBreaker() {
	ctx := context.Background()
	now := time.Date(2026, 12, 7, 4, 0, 0, 0, time.UTC)
	b, _ := breaker.New(breaker.Config{
		Pipeline: "agent-tasks", Store: breaker.NewMemory(),
		Settings: breaker.Settings{Threshold: 3, OpenFor: 30 * time.Second},
		Logger:   slog.New(slog.NewJSONHandler(io.Discard, nil)), Metrics: io.Discard,
		Now: func() time.Time { return now }, Rand: func() float64 { return 0 },
	})
	for _, tenant := range []string{"acme", "globex", "acme"} {
		_ = b.Record(ctx, "search-api", tenant, true, 0)
	}
	d, _ := b.Admit(ctx, "search-api")
	fmt.Println(d.Mode, d.Admit, d.Wait)
	d, _ = b.Admit(ctx, "mail-relay")
	fmt.Println(d.Mode, d.Admit)
	// Output:
	// open false 30s
	// closed true
}
