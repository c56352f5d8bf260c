package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/agentdlq/agentdlq/local/esm"
	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/redrive/audit"
)

// localSwitch is the local event source mappings' Enabled flags, read by
// every local worker (agentdlq work) of this checkout.
func localSwitch() (esm.Switch, error) {
	dir, err := localStateDir()
	if err != nil {
		return esm.Switch{}, withExit(exitRefused, err)
	}
	return esm.Switch{Dir: filepath.Join(dir, "esm")}, nil
}

// newPauseCmd is `agentdlq pause` (paused true) or `agentdlq resume`.
func newPauseCmd(g *globalFlags, paused bool) *cobra.Command {
	f := &redriveFlags{g: g}
	var out *output
	use, short, action := "resume", "Enable the worker's event source mapping again (it does not pull anything back from the DLQ)", audit.ActionResume
	example := `  agentdlq resume --pipeline agent-tasks --owner platform-oncall --why "fix v1.4.2 deployed (INC-412)"`
	if paused {
		use, short, action = "pause", "Disable the worker's event source mapping: the kill switch (messages wait on the hot queue)", audit.ActionPause
		example = `  agentdlq pause --pipeline agent-tasks --owner platform-oncall --why "worker charges twice (INC-412)"`
	}
	c := &cobra.Command{
		Use:   use + " --pipeline NAME --owner WHO --why TEXT",
		Short: short,
		Long: short + `.

pause disables the worker Lambda's event source mapping on the pipeline's hot
queue (UpdateEventSourceMapping, Enabled false): nothing is received, messages
wait on the hot queue with their receive counts untouched. resume enables it
again; nothing comes back from the DLQ (that is a redrive). Both are gated like
a redrive (the pipeline's owner, a why; in AWS the redrive role) and audited.
Locally the mapping is the one agentdlq work runs; it honours the switch on
its next receive.

The result is a line of text, or JSON with -o json ({"uuid","state","paused"}).

Exit codes: 0 done, 1 failed, 2 refused or bad input.`,
		Example: example,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			who := redrive.Who{Owner: f.owner, Why: f.why}
			r, err := f.open(ctx, action, who, nil)
			if err != nil {
				return err
			}
			res, err := r.Pause(ctx, redrive.PauseRequest{Who: who, Paused: paused})
			if err != nil {
				return err
			}
			if out.JSON() {
				return writeJSON(cmd.OutOrStdout(), res)
			}
			state := "resumed: the worker receives again"
			if paused {
				state = "paused: messages wait on the hot queue"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "pipeline %s %s (event source mapping %s, %s)\n", f.pipeline, state, res.UUID, res.State)
			return nil
		},
	}
	c.RunE = refusalsInFlags(f, c.RunE)
	c.Flags().StringVar(&f.pipeline, "pipeline", "", "pipeline name (required)")
	c.Flags().StringVar(&f.audit, "audit", "", "audit store: a JSONL file, or s3://bucket/prefix ("+outHelp("audit/<pipeline>.jsonl")+")")
	c.Flags().StringVar(&f.ledgerTable, "ledger-table", "", "the idempotency ledger table (default $AGENTDLQ_LEDGER_TABLE; agentdlq-ledger with local endpoints)")
	out = addOutput(c, formatTable, formatJSON)
	c.Flags().StringVar(&f.owner, "owner", "", "who acts: must be the pipeline's owner (required)")
	c.Flags().StringVar(&f.why, "why", "", "why the worker is "+map[bool]string{true: "paused", false: "resumed"}[paused]+": the incident, the fix (required)")
	return c
}
