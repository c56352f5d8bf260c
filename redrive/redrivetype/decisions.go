package redrivetype

import (
	"time"

	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/redrive/audit"
)

// Decision is one decision the owner recorded, as the audit holds it: a
// rejection (PlanGroup.Rejected).
type Decision struct {
	Time  time.Time `json:"time"`
	Actor string    `json:"actor"`
	Why   string    `json:"why,omitempty"`
}

// KeyDecision is the owner's reconciliation of one idempotency key, as the
// audit holds it: when, by whom, why, and the outcome (and receipt)
// recorded.
type KeyDecision struct {
	Time    time.Time      `json:"time"`
	Actor   string         `json:"actor"`
	Why     string         `json:"why,omitempty"`
	Key     string         `json:"idempotency_key"`
	Tenant  string         `json:"tenant,omitempty"`
	Outcome ledger.Outcome `json:"outcome"`
	Receipt string         `json:"receipt,omitempty"`
}

// Decisions are the owner's decisions on a pipeline's dead letters that
// the audit holds: the rejections and the reconciliations that succeeded.
type Decisions struct {
	// Rejections are the successful rejections, oldest first.
	Rejections []audit.Entry
	// Reconciled is the latest successful reconciliation of each key.
	Reconciled map[string]KeyDecision
}
