package redrive

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/agentdlq/agentdlq/breaker"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
)

// BreakerRequest asks to hold a dependency's circuit breaker open (Open) or
// to close it.
type BreakerRequest struct {
	Who
	// Dependency is required: the dependency's name, as the worker names it.
	Dependency string
	// Open is true to hold the breaker open, false to close it.
	Open bool
	// Store is required: where the pipeline's breakers are kept (the
	// worker's: dynamostore.Store on the ledger table).
	Store breaker.Store
}

// ForceBreaker holds a dependency's breaker open or closes it, as the
// pipeline's owner asked: gated like pause (the owner, a why, the DLQ's
// owner tag, in AWS the redrive role) and audited (breaker_open or
// breaker_close, with the mode before and after). A held breaker does not
// close by itself; closing it ramps the dependency's tasks back in.
func (r *Redriver) ForceBreaker(ctx context.Context, req BreakerRequest) (*redrivetype.BreakerResult, error) {
	action := audit.ActionBreakerClose
	if req.Open {
		action = audit.ActionBreakerOpen
	}
	rec := audit.Entry{Actor: req.Owner, Action: action, Why: req.Why, Detail: map[string]string{"dependency": req.Dependency}}
	res, err := r.forceBreaker(ctx, action, req)
	if res != nil {
		rec.Detail["before"], rec.Detail["after"] = string(modeOf(res.Before)), string(modeOf(res.After))
		rec.Detail["version"] = strconv.FormatInt(res.After.Version, 10)
	}
	return res, r.record(ctx, rec, err)
}

func modeOf(s breaker.State) breaker.Mode {
	if s.Mode == "" {
		return breaker.Closed
	}
	return s.Mode
}

func (r *Redriver) forceBreaker(ctx context.Context, action audit.Action, req BreakerRequest) (*redrivetype.BreakerResult, error) {
	if req.Dependency == "" {
		return nil, refuseField(redrivetype.CodeBadInput, "Dependency", "is required: name the dependency whose breaker to %s", map[bool]string{true: "hold open", false: "close"}[req.Open])
	}
	if req.Store == nil {
		return nil, fmt.Errorf("redrive: ForceBreaker needs a breaker store")
	}
	if err := r.authorizeAs(ctx, action, req.Who, minRate); err != nil {
		return nil, err
	}
	b, err := breaker.New(breaker.Config{Pipeline: r.cfg.Pipeline.Name, Store: req.Store, Settings: r.cfg.Pipeline.Breaker.Settings(), Logger: r.log(),
		Metrics: io.Discard}) // the audit entry is the record of a forced change
	if err != nil {
		return nil, err
	}
	before, err := b.Status(ctx, req.Dependency)
	if err != nil {
		return nil, err
	}
	after, _, err := b.Force(ctx, req.Dependency, req.Open, req.Owner, req.Why)
	if err != nil {
		return nil, err
	}
	return &redrivetype.BreakerResult{Dependency: req.Dependency, Before: before, After: after}, nil
}
