package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/spf13/cobra"

	"github.com/agentdlq/agentdlq/internal/awscfg"
	"github.com/agentdlq/agentdlq/internal/topology"
	"github.com/agentdlq/agentdlq/ledger"
)

// newLedgerCmd is the read-only look at the idempotency ledger that an
// operator needs to reconcile effect_unknown dead letters (RUNBOOK.md).
func newLedgerCmd(_ *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ledger",
		Short: "Read the idempotency ledger (read only): state, effect receipt, dead-letter and redrive counts of a key",
		Example: `  agentdlq ledger get --key acme:r-w:w-1
  agentdlq ledger get --key acme:r-w:w-1 --key acme:r-w:w-2 -o json`,
	}
	var table string
	var out *output
	get := &cobra.Command{
		Use:   "get --key KEY [--key KEY ...] [-o table|json]",
		Short: "Print the ledger entries of idempotency keys",
		Long: `get prints, for each key, its state (in_progress, done, dead_lettered), the
effect receipt when the task finished, whether a mutating call was started
(effect_started without a receipt is what makes a dead letter effect_unknown),
and its dead-letter and redrive counts: a table (the default), or with -o json
one JSON line a key, a key the ledger does not hold being
{"idempotency_key":…,"found":false}. It never writes.`,
		Example: `  agentdlq ledger get --key acme:r-w:w-1
  agentdlq ledger get --key acme:r-w:w-1 --key acme:r-w:w-2 -o json | jq -r .state
  agentdlq ledger get --key acme:r-w:w-1 --ledger-table agentdlq-prod-ledger --profile prod`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			keys, _ := cmd.Flags().GetStringArray("key")
			if len(keys) == 0 {
				return withExit(2, errors.New("ledger get: --key is required"))
			}
			name := ledgerTableName(table)
			if name == "" {
				return withExit(2, errors.New("ledger get: no ledger table: pass --ledger-table or set AGENTDLQ_LEDGER_TABLE (the stack output LedgerTableName)"))
			}
			cfg, err := awscfg.Load(cmd.Context())
			if err != nil {
				return err
			}
			l := ledger.NewDynamo(dynamodb.NewFromConfig(cfg), name)
			var rows [][]string
			for _, key := range keys {
				e, ok, err := l.Get(cmd.Context(), key)
				if err != nil {
					return fmt.Errorf("ledger get %q: %w", key, err)
				}
				if out.JSON() {
					var v any = e
					if !ok {
						v = map[string]any{"idempotency_key": key, "found": false}
					}
					if err := writeJSONLine(cmd.OutOrStdout(), v); err != nil {
						return err
					}
					continue
				}
				rows = append(rows, ledgerRow(key, e, ok))
			}
			if !out.JSON() {
				writeTable(cmd.OutOrStdout(), ledgerHeader, rows)
			}
			return nil
		},
	}
	get.Flags().StringArray("key", nil, "idempotency key (repeatable)")
	get.Flags().StringVar(&table, "ledger-table", "", "ledger table (default $AGENTDLQ_LEDGER_TABLE; agentdlq-ledger with local endpoints)")
	out = addOutput(get, formatTable, formatJSON)
	cmd.AddCommand(get)
	return cmd
}

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
