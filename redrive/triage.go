package redrive

import (
	"context"
	"errors"

	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/report"
)

// groupsFromReport turns a triage report's groups into redrive groups.
func groupsFromReport(r *report.Report) []Group {
	if r == nil {
		return nil
	}
	out := make([]Group, 0, len(r.Groups))
	for _, g := range r.Groups {
		out = append(out, Group{Reason: g.Reason, Fingerprint: g.Fingerprint, Count: g.Count})
	}
	return out
}

// triageScan is the default Config.Scan: a read-only triage scan of the DLQ.
func (r *Redriver) triageScan(ctx context.Context) (*report.Report, error) {
	return triage.Run(ctx, triage.Config{Pipeline: r.cfg.Pipeline, DLQURL: r.cfg.Queues.DLQURL, SQS: r.cfg.SQS, Senders: r.cfg.Queues.Senders, Ledger: r.cfg.Ledger, Logger: r.cfg.Logger})
}

// scan returns the groups the DLQ holds and the report they came from. A
// DLQ that does not exist is a refusal.
func (r *Redriver) scan(ctx context.Context) ([]Group, *report.Report, error) {
	rep, err := r.cfg.Scan(ctx)
	if err != nil {
		if errors.Is(err, triage.ErrQueueNotFound) {
			return nil, nil, refuse(redrivetype.CodeDLQMissing, "%v", err)
		}
		return nil, nil, err
	}
	groups := groupsFromReport(rep)
	if groups == nil {
		groups = []Group{}
	}
	return groups, rep, nil
}

// pureGate runs the gate's checks that need no AWS call (owner, why,
// rate), so that a wrong owner or a bad rate costs no scan.
func (r *Redriver) pureGate(who Who, rate int) error { return r.pureGateAs("", who, rate) }

// pureGateAs is pureGate for action, whose refusals speak of it.
func (r *Redriver) pureGateAs(action audit.Action, who Who, rate int) error {
	return gate(gateInput{Action: action, Pipeline: r.cfg.Pipeline, Owner: who.Owner, Why: who.Why, Rate: rate,
		QueueTags: map[string]string{pipeline.TagOwner: r.cfg.Pipeline.Owner}, identity: identity{Local: true}})
}
