package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentdlq/agentdlq/events/agenttask"
	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/functions/sampleworker"
	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
)

// localEffects is the sample tools' effect store every local worker of
// this checkout writes (agentdlq work) and ledger verify reads.
func localEffects() (sampleworker.EffectDir, error) {
	dir, err := localStateDir()
	if err != nil {
		return sampleworker.EffectDir{}, err
	}
	return sampleworker.EffectDir{Dir: filepath.Join(dir, "effects")}, nil
}

// verifyCatalog is the catalog whose verifiers ledger verify runs, by the
// locality open decided: the sample tools', over the local effect store,
// when every endpoint is local (where agentdlq work runs the sample worker
// with that store); else the sample catalog without verifiers, since the
// deployed sample worker keeps no effect store, and every key is unknown.
// note says why no verifier ran, when none can. An adopter's tools run
// from the adopter's own main (docs/redrive.md).
func verifyCatalog(local bool) (catalog agenttask.Catalog, note string) {
	if !local {
		return sampleworker.Catalog(nil), "the sample tools keep no effect store in AWS: no verifier ran (docs/redrive.md: verifying with your own tools)"
	}
	eff, err := localEffects()
	if err != nil {
		return sampleworker.Catalog(nil), "no local effect store (" + err.Error() + "): no verifier ran"
	}
	return sampleworker.Catalog(eff), ""
}

// verifyTimeout is --timeout's default: how long one verifier may take.
const verifyTimeout = 30 * time.Second

// newLedgerVerifyCmd runs the tools' verifiers over the effect_unknown
// keys and proposes, or with --apply records, their outcomes
// (redrive.Redriver.Verify).
func newLedgerVerifyCmd(g *globalFlags) *cobra.Command {
	f := &redriveFlags{g: g}
	var reason string
	var apply bool
	var timeout time.Duration
	var out *output
	c := &cobra.Command{
		Use:   "verify --pipeline NAME [--reason effect_unknown] --owner WHO --why TEXT [--apply] [-o table|json]",
		Short: "Check effect_unknown keys with their tools' read-only verifiers; propose, or with --apply record, what each call did (owner only, audited)",
		Long: `verify reads the pipeline's DLQ (read-only, as triage does), takes the dead
letters of --reason (effect_unknown by default; receive_limit holds a crash after
the call started), and for each idempotency key whose mutating call the ledger
holds as unknown (effect started, no receipt, not reconciled) runs the verifier
registered on its tool: a read-only check in the external system, answering

  confirmed   the call took effect (with the external system's receipt)
  no_effect   the call reached the system and nothing took effect
  unknown     the check cannot tell: check by hand (agentdlq ledger reconcile)

It prints one row a key: the verdict and the verifier's evidence, or why the key
was skipped (already reconciled, done, no call started, no ledger entry).
Without --apply nothing changes: it proposes. With --apply each definite verdict
is recorded as agentdlq ledger reconcile records it (confirmed: --effect-confirmed
with the verifier's receipt; no_effect: --no-effect), gated and audited as
reconcile with the verifier's evidence; unknown keys are left alone.

Verifiers are the adopter's code, registered on the tools (agenttask.Tool.Verify).
This command runs the sample tools' (file.write, email.send), which check the
local effect store the local worker writes (.local/effects); against AWS they have
none and every key is unknown. docs/redrive.md shows how to run verification with
your own tools.

Only the pipeline's owner may verify, with a --why; both modes are audited.
Exit codes: 0 done, 2 refused or bad input (nothing written), 1 failed or the
scan saw only part of the DLQ (what was verified stands; rerun later).`,
		Example: `  agentdlq ledger verify --pipeline agent-tasks --owner platform-oncall --why "INC-77: check the mail relay"
  agentdlq ledger verify --pipeline agent-tasks --owner platform-oncall --why "INC-77: mail relay log checked" --apply
  agentdlq ledger verify --pipeline agent-tasks --reason receive_limit --owner platform-oncall --why "INC-78: worker OOM" -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			who := redrive.Who{Owner: f.owner, Why: f.why}
			rs, err := deadletter.ParseReason(reason)
			if err != nil { // ParseReason's error names the known reasons
				return f.refused(ctx, nil, audit.ActionReconcile, who, &redrive.Refusal{Code: redrivetype.CodeUnknownReason, Field: "--reason", Reason: fmt.Sprintf("%q: %v", reason, err)})
			}
			if timeout <= 0 {
				return f.refused(ctx, nil, audit.ActionReconcile, who, &redrive.Refusal{Code: redrivetype.CodeBadInput, Field: "--timeout", Reason: fmt.Sprintf("%s is not positive", timeout)})
			}
			var note string
			f.catalog = func(local bool) (c agenttask.Catalog) {
				c, note = verifyCatalog(local)
				return c
			}
			r, err := f.open(ctx, audit.ActionReconcile, who, nil)
			if err != nil {
				return err
			}
			res, err := r.Verify(ctx, redrive.VerifyRequest{Who: who, Reason: rs, Apply: apply, Timeout: timeout})
			if errors.Is(err, redrive.ErrRefused) {
				return err // nothing was done: the error alone
			}
			if note != "" {
				fmt.Fprintln(cmd.ErrOrStderr(), "note:", note)
			}
			if out.JSON() {
				if err != nil {
					return withResult(err, res)
				}
				return writeJSON(cmd.OutOrStdout(), res)
			}
			writeVerifyResult(cmd.OutOrStdout(), cmd.ErrOrStderr(), f.pipeline, res)
			return err
		},
	}
	c.RunE = refusalsInFlags(f, c.RunE)
	fl := c.Flags()
	fl.StringVar(&f.pipeline, "pipeline", "", "pipeline name (required: its owner is the only one who may verify)")
	fl.StringVar(&reason, "reason", string(deadletter.ReasonEffectUnknown), "the dead letters whose keys are verified (effect_unknown, or receive_limit after a crash)")
	fl.BoolVar(&apply, "apply", false, "record the definite verdicts (confirmed, no_effect) as reconciliations; without it nothing changes")
	fl.DurationVar(&timeout, "timeout", verifyTimeout, "how long one verifier may take (longer: unknown)")
	fl.StringVar(&f.owner, "owner", "", "who verifies: must be the pipeline's owner (required)")
	fl.StringVar(&f.why, "why", "", "why now: the incident, what is being checked (required)")
	fl.StringVar(&f.audit, "audit", "", "audit store: a JSONL file, or s3://bucket/prefix ("+outHelp("audit/<pipeline>.jsonl")+")")
	fl.StringVar(&f.ledgerTable, "ledger-table", "", "ledger table (default $AGENTDLQ_LEDGER_TABLE; agentdlq-ledger with local endpoints)")
	out = addOutput(c, formatTable, formatJSON)
	return c
}

var verifyHeader = []string{"key", "tool", "letters", "verdict", "receipt", "evidence"}

// writeVerifyResult prints verify's rows, then on stderr what was done and
// the next command.
func writeVerifyResult(w, stderr io.Writer, pipelineName string, res *redrivetype.VerifyResult) {
	header := verifyHeader
	if res.Applied {
		header = append(append([]string(nil), header...), "reconciled")
	}
	rows := make([][]string, 0, len(res.Keys))
	for _, k := range res.Keys {
		verdict, evidence := string(k.Verdict), k.Evidence
		if k.Skipped != "" {
			verdict, evidence = "skipped", k.Skipped
		}
		row := []string{orDash(k.Key), orDash(k.Tool), strconv.Itoa(k.Letters), verdict, orDash(k.Receipt), evidence}
		if res.Applied {
			switch {
			case k.Refused != "":
				row = append(row, "refused: "+k.Refused)
			default:
				row = append(row, orDash(string(k.Reconciled)))
			}
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		fmt.Fprintf(stderr, "no %s dead letters in the DLQ of %s (saw %d): nothing to verify\n", res.Reason, pipelineName, res.Seen)
		return
	}
	writeTable(w, header, rows)
	c := res.Counts
	fmt.Fprintf(stderr, "%d key(s) of %s: %d confirmed, %d no_effect, %d unknown, %d skipped\n",
		len(res.Keys), res.Reason, c["confirmed"], c["no_effect"], c["unknown"], c["skipped"])
	switch {
	case !res.Applied && c["confirmed"]+c["no_effect"] > 0:
		fmt.Fprintln(stderr, "proposed only, nothing changed: rerun with --apply to record the confirmed and no_effect verdicts")
	case res.Applied:
		fmt.Fprintf(stderr, "reconciled %d, refused %d; unknown keys are left alone: check them by hand (agentdlq ledger reconcile)\n", c["reconciled"], c["refused"])
		if c["reconciled"] > 0 {
			fmt.Fprintf(stderr, "next: agentdlq redrive plan --pipeline %s (no_effect keys redrive without --override; confirmed ones never run again: reject their letters)\n", pipelineName)
		}
	}
}
