package redrive

import (
	"context"
	"errors"

	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
)

// Refuse audits a refusal that came before a Redriver could act — bad
// input, an unknown pipeline, a Config that New refused, queues that do not
// exist, an STS endpoint that is not AWS's — to a, under the pipeline's
// audit.Name, with the caller not checked (the OS user: STS was not asked),
// and returns it as a refusal
// (errors.Is(err, ErrRefused); an error that was not one becomes a refusal
// with code bad_input). err is recorded as given: a caller tells a refusal's
// field in its users' words first (Told, as Config.FieldNames). A failure to audit is joined to it. Refusals of a
// Redriver's own actions are audited by the actions themselves.
func Refuse(ctx context.Context, a *audit.Auditor, pipelineName string, action audit.Action, who Who, err error) error {
	if !errors.Is(err, ErrRefused) {
		err = &Refusal{Code: redrivetype.CodeBadInput, Reason: err.Error()}
	}
	entry := audit.Entry{Actor: who.Owner, Pipeline: audit.Name(pipelineName), Action: action, Why: who.Why, Outcome: audit.OutcomeRefused, Error: err.Error()}
	if aerr := a.Record(ctx, entry); aerr != nil {
		return errors.Join(err, aerr)
	}
	return err
}
