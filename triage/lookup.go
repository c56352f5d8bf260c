package triage

import (
	"context"
	"fmt"

	"github.com/agentdlq/agentdlq/ledger"
)

// KeyReader is what triage reads of the ledger: one key's entry.
// ledger.Ledger satisfies it.
type KeyReader interface {
	Get(ctx context.Context, key string) (e ledger.Entry, ok bool, err error)
}

// maxLedgerLookups bounds the keys one triage reads from the ledger.
const maxLedgerLookups = 5000

// lookupLedger reads the ledger entry of each distinct idempotency key (up
// to maxLedgerLookups) and sets Tagged.Ledger, so that Build sees dead-letter
// and redrive counts. It stops at the first error and returns it with what
// it had read; the entries are only ever read. A key is read scoped to
// the pipeline and the letter's tenant (ledger.Key), as the worker wrote it.
func lookupLedger(ctx context.Context, pipeline string, tagged []Tagged, kr KeyReader) (looked int, err error) {
	entries := map[string]*ledger.Entry{}
	for i := range tagged {
		if tagged[i].Hints.IdempotencyKey == "" {
			continue
		}
		key := ledger.Key(pipeline, tagged[i].Hints.Tenant, tagged[i].Hints.IdempotencyKey)
		e, seen := entries[key]
		if !seen {
			if looked >= maxLedgerLookups {
				continue
			}
			looked++
			got, ok, gerr := kr.Get(ctx, key)
			if gerr != nil {
				return looked, fmt.Errorf("triage: ledger lookup: %w", gerr)
			}
			if ok {
				e = &got
			}
			entries[key] = e
		}
		tagged[i].Ledger = e
	}
	return looked, nil
}
