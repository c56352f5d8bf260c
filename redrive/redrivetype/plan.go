package redrivetype

import (
	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/triage/dlq"
)

// Plan says, for each group of dead letters in a DLQ, whether it may be
// redriven, why or why not, and what to do next (Steps, which the CLI and
// the console render as commands and forms).
type Plan struct {
	Pipeline string      `json:"pipeline"`
	Owner    string      `json:"owner"`
	Total    int         `json:"total"`
	Groups   []PlanGroup `json:"groups"`
	// Start is the move task of the whole DLQ when every group may be
	// redriven by policy alone; nil otherwise, and StartWhy says why.
	Start    *Step  `json:"start,omitempty"`
	StartWhy string `json:"start_why"`
	// Partial says why the triage scan behind the plan may have missed dead
	// letters (counts may be low); empty when it saw the whole DLQ.
	Partial []string `json:"partial,omitempty"`
	// DecisionsUnread says why the owner's past decisions (rejections,
	// reconciliations) could not be read from the audit; empty when they were.
	DecisionsUnread string `json:"decisions_unread,omitempty"`
	// Filter is set when the plan is of the dead letters a filter chose
	// (redrive.PlanRequest.Filter): its groups and counts are of those, and each
	// step moves only those (a select with the same filter).
	Filter *dlq.Filtered `json:"filter,omitempty"`
	// Copies counts the extra copies of the dead letters the DLQ holds
	// more than once (triage's totals.copies: a dead-letter send retried
	// after SQS took it), which Total and the groups do not count;
	// CopiedLetters the dead letters that have them. A select moves one of
	// each and deletes the identical others after the move;
	// CopiesDiffering counts the copies whose dlq_meta or attributes differ
	// (dead-lettered again, not sent twice), which it moves as letters of
	// their own.
	Copies          int `json:"copies,omitempty"`
	CopiedLetters   int `json:"copied_letters,omitempty"`
	CopiesDiffering int `json:"copies_differing,omitempty"`
}

// PlanGroup is one group and its decision.
type PlanGroup struct {
	Reason      deadletter.Reason     `json:"reason"`
	Fingerprint string                `json:"fingerprint"`
	Count       int                   `json:"count"`
	NextAction  deadletter.NextAction `json:"next_action"`
	Redrivable  deadletter.Redrivable `json:"redrivable"`
	// MayRedrive is true when policy alone allows it; false when it needs an
	// acknowledgement (Needs) or may never be redriven.
	MayRedrive bool   `json:"may_redrive"`
	Why        string `json:"why"`
	// Needs names the acknowledgement the policy wants (the request field:
	// "Ack.FixDeployed", "Ack.Reviewed", "Ack.Overrides"); "" when allowed.
	Needs string `json:"needs,omitempty"`
	// Next are the steps to take for this group, in order; empty when
	// nothing is left to do (rejected).
	Next []Step `json:"next"`
	// Rejected is the owner's latest rejection of the group, read from the
	// audit: its Time, Actor and Why; nil when there is none.
	Rejected *Decision `json:"rejected,omitempty"`
	// Keys counts the idempotency keys the triage report listed for an
	// effect_unknown group; Reconciled counts those the owner reconciled,
	// by outcome, read from the audit.
	Keys       int                    `json:"keys,omitempty"`
	Reconciled map[ledger.Outcome]int `json:"reconciled,omitempty"`
}

// RejectResult is what a rejection recorded, and the warnings it gave.
type RejectResult struct {
	Pipeline     string         `json:"pipeline"`
	Reasons      []string       `json:"reasons"`
	Fingerprints []string       `json:"fingerprints,omitempty"`
	Counts       map[string]int `json:"counts"`
	// Warnings say what should make the owner think twice:
	// a group rejected before, a reason the policy would let be redriven.
	// They are in the audit record too (detail "warnings"); they refuse nothing.
	Warnings []string `json:"warnings,omitempty"`
}
