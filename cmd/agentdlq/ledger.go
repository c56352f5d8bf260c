package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/spf13/cobra"

	"github.com/agentdlq/agentdlq/internal/awscfg"
	"github.com/agentdlq/agentdlq/internal/textutil"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/local/topology"
	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/redrive/audit"
)

// newLedgerCmd is the read-only look at the idempotency ledger that an
// operator needs to reconcile effect_unknown dead letters (RUNBOOK.md).
func newLedgerCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ledger",
		Short: "Read the idempotency ledger (state, effect receipt, counts of a key), verify and reconcile effect_unknown keys (owner only)",
		Example: `  agentdlq ledger get --pipeline agent-tasks --tenant acme --key acme:r-w:w-1
  agentdlq ledger get --pipeline agent-tasks --tenant acme --key acme:r-w:w-1 --key acme:r-w:w-2 -o json
  agentdlq ledger reconcile --pipeline agent-tasks --tenant acme --key acme:r-w:w-1 --no-effect --owner platform-oncall --why "mail log: nothing sent"
  agentdlq ledger verify --pipeline agent-tasks --owner platform-oncall --why "INC-77" [--apply]`,
	}
	var table, pipelineName, tenant string
	var out *output
	get := &cobra.Command{
		Use:   "get --pipeline NAME --tenant TENANT --key KEY [--key KEY ...] [-o table|json]",
		Short: "Print the ledger entries of idempotency keys",
		Long: `get prints, for each key, its state (in_progress, done, dead_lettered), the
effect receipt when the task finished, whether a mutating call was started
(effect_started without a receipt is what makes a dead letter effect_unknown),
its dead-letter and redrive counts, and, once the owner reconciled it
(agentdlq ledger reconcile), reconciled (effect_confirmed or no_effect),
reconciled_by and reconciled_at: a table (the default), or with -o json one
JSON line a key. It never writes.

A key the ledger does not hold (never begun by a worker, or its entry
expired) is not found: the keys found are printed, then the command fails
with exit 2 naming the others ("agentdlq: ledger get: not in the ledger: K"
on stderr; with -o json the error object {"error":…,"code":"not_found",
"exit_code":2} after the entries' lines).

A key is the producer's only within its pipeline and tenant: the ledger
holds it as scope:<len>:<pipeline>:<len>:<tenant>:<key> (docs/worker.md,
"Whose key it is"), which --pipeline and --tenant make. A --key that is
already in that form is read as it is; without --pipeline and --tenant, a
key is read as it was written before keys were scoped. A scoped key not
found reads as the entry written before the upgrade, when there is one
(its key is then the bare key).

The keys of effect_unknown dead letters: agentdlq triage --pipeline NAME --keys.`,
		Example: `  agentdlq ledger get --pipeline agent-tasks --tenant acme --key acme:r-w:w-1
  agentdlq ledger get --pipeline agent-tasks --tenant acme --key acme:r-w:w-1 --key acme:r-w:w-2 -o json | jq -r .state
  keys=$(agentdlq triage --pipeline agent-tasks --keys --reports "") && while read -r k; do agentdlq ledger get --key "$k"; done <<<"$keys"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			keys, _ := cmd.Flags().GetStringArray("key")
			if len(keys) == 0 {
				return withExit(2, errors.New("ledger get: --key is required"))
			}
			if (pipelineName == "") != !cmd.Flags().Changed("tenant") {
				return withExit(2, errors.New("ledger get: give --pipeline and --tenant together (a key is its tenant's within its pipeline), or neither for a key as written before keys were scoped"))
			}
			name := ledgerTableName(table)
			if name == "" {
				return withExit(2, errors.New("ledger get: "+noLedgerTable))
			}
			cfg, err := awscfg.Load(cmd.Context())
			if err != nil {
				return err
			}
			l := ledger.NewDynamo(dynamodb.NewFromConfig(cfg), name)
			var rows [][]string
			var missing []string
			for _, key := range keys {
				if _, _, _, scoped := ledger.ParseKey(key); !scoped && pipelineName != "" {
					key = ledger.Key(pipelineName, tenant, key)
				}
				e, ok, err := l.Get(cmd.Context(), key)
				if err != nil {
					return fmt.Errorf("ledger get %q: %w", key, err)
				}
				switch {
				case !ok:
					missing = append(missing, key)
				case out.JSON():
					if err := writeJSONLine(cmd.OutOrStdout(), e); err != nil {
						return err
					}
				default:
					rows = append(rows, ledgerRow(e))
				}
			}
			if !out.JSON() && len(rows) > 0 {
				writeTable(cmd.OutOrStdout(), ledgerHeader, rows)
			}
			if len(missing) > 0 {
				return &notFoundError{fmt.Errorf("ledger get: not in the ledger: %s (a key no worker began, or whose entry expired; the keys of effect_unknown dead letters: agentdlq triage --pipeline NAME --keys)",
					strings.Join(missing, ", "))}
			}
			return nil
		},
	}
	get.Flags().StringArray("key", nil, "idempotency key (repeatable)")
	get.Flags().StringVar(&pipelineName, "pipeline", "", "the pipeline whose key it is (with --tenant: the key's scope)")
	get.Flags().StringVar(&tenant, "tenant", "", "the task's tenant (with --pipeline: the key's scope)")
	get.Flags().StringVar(&table, "ledger-table", "", "ledger table (default $AGENTDLQ_LEDGER_TABLE; agentdlq-ledger with local endpoints)")
	out = addOutput(get, formatTable, formatJSON)
	cmd.AddCommand(get, newLedgerReconcileCmd(g), newLedgerVerifyCmd(g))
	return cmd
}

// newLedgerReconcileCmd records, for the pipeline's owner, what an
// effect_unknown key's mutating call did (redrive.Redriver.Reconcile).
func newLedgerReconcileCmd(g *globalFlags) *cobra.Command {
	f := &redriveFlags{g: g}
	var key, tenant, receipt string
	var noEffect bool
	var out *output
	c := &cobra.Command{
		Use:   "reconcile --pipeline NAME --tenant TENANT --key KEY (--effect-confirmed RECEIPT | --no-effect) --owner WHO --why TEXT [-o table|json]",
		Short: "Record what an effect_unknown key's mutating call did, after checking the external system (owner only, audited)",
		Long: `reconcile records, in the ledger and the audit, what the owner found out in the
external system about a key whose mutating call started and left no receipt
(the keys of effect_unknown dead letters: agentdlq triage --keys).

  --effect-confirmed RECEIPT  the effect happened (RECEIPT: the external system's id of it).
                              The key is done: its dead letter never runs again; select
                              skips it. Reject it (agentdlq redrive reject) or let
                              retention drop it.
  --no-effect                 the effect did not happen. agentdlq redrive select
                              --reason effect_unknown moves this key's dead letter without
                              --override, and the worker runs it afresh.

Only the pipeline's owner may reconcile (the same gate as a redrive), with a
--why; every attempt is audited, refusals too. Only a key whose effect is
unknown may be reconciled; the same reconciliation again changes nothing, a
different one is refused. It prints the key's ledger entry: a table (the
default) with the next command on stderr, or with -o json one JSON line.

Exit codes: 0 done, 2 refused or bad input (nothing written), 1 failed.`,
		Example: `  agentdlq ledger reconcile --pipeline agent-tasks --tenant acme --key acme:r-w:w-1 --no-effect \
    --owner platform-oncall --why "mail provider log: nothing sent for the run (INC-77)"
  agentdlq ledger reconcile --pipeline agent-tasks --tenant acme --key acme:r-w:w-2 --effect-confirmed msg-7731 \
    --owner platform-oncall --why "mail provider log: sent as msg-7731 (INC-77)" -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			who := redrive.Who{Owner: f.owner, Why: f.why}
			req := redrive.ReconcileRequest{Who: who, Key: key, Tenant: tenant, Receipt: receipt}
			switch {
			case cmd.Flags().Changed("effect-confirmed") == noEffect:
				return f.refused(ctx, nil, audit.ActionReconcile, who, errors.New("give exactly one of --effect-confirmed RECEIPT and --no-effect"))
			case noEffect:
				req.Outcome = ledger.OutcomeNoEffect
			default:
				req.Outcome = ledger.OutcomeEffectConfirmed
			}
			r, err := f.open(ctx, audit.ActionReconcile, who, nil)
			if err != nil {
				return err
			}
			// A reconciliation recorded before this command (the same
			// one again: a no-op the ledger leaves as it was) is older
			// than its start; one this command wrote is stamped after it
			// (the ledger keeps the Redriver's clock, this process's).
			start := time.Now()
			e, err := r.Reconcile(ctx, req)
			if err != nil {
				return err
			}
			repeat := e.ReconciledAt.Before(start)
			if out.JSON() {
				return writeJSONLine(cmd.OutOrStdout(), reconciled{Entry: e, Repeat: repeat})
			}
			writeTable(cmd.OutOrStdout(), reconcileHeader, [][]string{reconcileRow(e)})
			p, err := f.g.loadPipeline(f.pipeline)
			if err != nil {
				return err
			}
			if repeat {
				fmt.Fprintf(cmd.ErrOrStderr(), "key %s: already reconciled (%s by %s at %s), nothing changed\n",
					key, e.Reconciled, e.ReconciledBy, e.ReconciledAt.UTC().Format(time.RFC3339))
			}
			if e.EffectConfirmed() {
				fmt.Fprintf(cmd.ErrOrStderr(), "key %s: effect confirmed (receipt %s); it never runs again. Reject its dead letter: agentdlq redrive reject --pipeline %s --reason effect_unknown --owner %s --why '<why>'\n",
					textutil.Escape(e.Key), textutil.Escape(e.Receipt), p.Name, p.Owner)
			} else {
				fmt.Fprintf(cmd.ErrOrStderr(), "key %s: no effect; redrive it without --override: agentdlq redrive select --pipeline %s --reason effect_unknown --owner %s --why '<why>' --canary 1\n",
					textutil.Escape(e.Key), p.Name, p.Owner)
			}
			return nil
		},
	}
	c.RunE = refusalsInFlags(f, c.RunE) // a refusal names the flag at fault (redrive.go)
	fl := c.Flags()
	fl.StringVar(&f.pipeline, "pipeline", "", "pipeline name (required: its owner is the only one who may reconcile)")
	fl.StringVar(&key, "key", "", "the idempotency key (agentdlq triage --keys)")
	fl.StringVar(&tenant, "tenant", "", "the task's tenant: with the pipeline, the key's scope (without it, only an entry written before keys were scoped is found)")
	fl.StringVar(&receipt, "effect-confirmed", "", "the effect happened: the external system's id of it (its receipt)")
	fl.BoolVar(&noEffect, "no-effect", false, "the effect did not happen: the key may be redriven without --override")
	fl.StringVar(&f.owner, "owner", "", "who reconciles: must be the pipeline's owner (required)")
	fl.StringVar(&f.why, "why", "", "how the effect was reconciled: which system was checked and what it showed (required)")
	fl.StringVar(&f.audit, "audit", "", "audit store: a JSONL file, or s3://bucket/prefix ("+outHelp("audit/<pipeline>.jsonl")+")")
	fl.StringVar(&f.ledgerTable, "ledger-table", "", "ledger table (default $AGENTDLQ_LEDGER_TABLE; agentdlq-ledger with local endpoints)")
	out = addOutput(c, formatTable, formatJSON)
	return c
}

// reconciled is reconcile's JSON line: the key's ledger entry, and repeat
// when the same reconciliation had been recorded before (nothing changed).
type reconciled struct {
	ledger.Entry
	Repeat bool `json:"repeat,omitempty"`
}

var reconcileHeader = []string{"key", "state", "reconciled", "receipt", "by", "at"}

// reconcileRow is a reconciled key's row.
func reconcileRow(e ledger.Entry) []string {
	return []string{e.Key, string(e.State), string(e.Reconciled), orDash(e.Receipt), e.ReconciledBy, e.ReconciledAt.UTC().Format(time.RFC3339)}
}

// noLedgerTable is the refusal of a command that needs the ledger and has
// no table (ledgerTableName is "").
const noLedgerTable = "no ledger table: pass --ledger-table or set AGENTDLQ_LEDGER_TABLE (the stack output LedgerTableName)"

// ledgerTableName is the ledger table to use: the flag, else
// AGENTDLQ_LEDGER_TABLE, else the local topology's table when the endpoints
// are local (docs/wiring.md), else none.
func ledgerTableName(flag string) string {
	if flag != "" {
		return flag
	}
	if t := os.Getenv("AGENTDLQ_LEDGER_TABLE"); t != "" {
		return t
	}
	if os.Getenv("AWS_ENDPOINT_URL_DYNAMODB") != "" || os.Getenv("AWS_ENDPOINT_URL") != "" {
		return topology.LocalLedgerTable
	}
	return ""
}
