package main

import (
	"encoding/json"
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
	}
	var table string
	get := &cobra.Command{
		Use:   "get --key KEY [--key KEY ...]",
		Short: "Print the ledger entries of idempotency keys as JSON lines",
		Long: `get prints one JSON line per key: its state (in_progress, done, dead_lettered),
the effect receipt when the task finished, whether a mutating call was started
(effect_started without a receipt is what makes a dead letter effect_unknown),
and its dead-letter and redrive counts. A key the ledger does not hold prints
{"idempotency_key":…,"found":false}. It never writes.`,
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
			enc := json.NewEncoder(cmd.OutOrStdout())
			for _, key := range keys {
				e, ok, err := l.Get(cmd.Context(), key)
				if err != nil {
					return fmt.Errorf("ledger get %q: %w", key, err)
				}
				var v any = e
				if !ok {
					v = map[string]any{"idempotency_key": key, "found": false}
				}
				if err := enc.Encode(v); err != nil {
					return err
				}
			}
			return nil
		},
	}
	get.Flags().StringArray("key", nil, "idempotency key (repeatable)")
	get.Flags().StringVar(&table, "ledger-table", "", "ledger table (default $AGENTDLQ_LEDGER_TABLE; agentdlq-ledger with local endpoints)")
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
