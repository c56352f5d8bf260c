package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/spf13/cobra"

	"github.com/agentdlq/agentdlq/breaker"
	"github.com/agentdlq/agentdlq/breaker/dynamostore"
	"github.com/agentdlq/agentdlq/internal/awscfg"
	"github.com/agentdlq/agentdlq/internal/textutil"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/redrive/audit"
)

// newBreakerCmd is `agentdlq breaker status|open|close`.
func newBreakerCmd(g *globalFlags) *cobra.Command {
	c := &cobra.Command{
		Use:   "breaker status|open|close --pipeline NAME [--dependency NAME]",
		Short: "Show a pipeline's circuit breakers, or hold one open or close it (the owner, gated and audited)",
		Long: `breaker shows or changes the circuit breaker the worker keeps per dependency
(pipelines.json "breaker"; docs/worker.md). Its state is one item in the
pipeline's ledger table, shared by every worker instance.

status without --dependency lists every dependency's breaker (the first
step after a breaker-open alarm: which dependency); with --dependency it
prints one: the mode (closed, open, half_open), the failures in the window
and how many tenants they came from (it opens on breaker.min_tenants of
them, default 2: one tenant's failures alone never open it), until when
it is open, the probes, the ramp, and who forced it last. It
reads only.

open holds the breaker open: the tasks that need the dependency are deferred
(uncounted requeues) until the owner closes it; a held breaker never closes
by itself. close closes it: the tasks come back over the ramp. Both are gated
like pause (the pipeline's owner, a why; in AWS the redrive role) and audited
(breaker_open, breaker_close).

Exit codes: 0 done, 1 failed, 2 refused or bad input.`,
		Example: `  agentdlq breaker status --pipeline agent-tasks
  agentdlq breaker status --pipeline agent-tasks --dependency search-api
  agentdlq breaker open --pipeline agent-tasks --dependency search-api --owner platform-oncall --why "provider incident INC-77"
  agentdlq breaker close --pipeline agent-tasks --dependency search-api --owner platform-oncall --why "provider recovered (INC-77)"`,
	}
	c.AddCommand(newBreakerStatusCmd(g), newBreakerForceCmd(g, true), newBreakerForceCmd(g, false))
	return c
}

func breakerStore(ctx context.Context, tableFlag string) (breaker.Store, error) {
	table := ledgerTableName(tableFlag)
	if table == "" {
		return nil, withExit(exitRefused, errors.New(noLedgerTable))
	}
	cfg, err := awscfg.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("aws config: %w", err)
	}
	return dynamostore.New(dynamodb.NewFromConfig(cfg), table), nil
}

func newBreakerStatusCmd(g *globalFlags) *cobra.Command {
	var pipelineName, dep, table string
	var out *output
	c := &cobra.Command{
		Use:   "status --pipeline NAME [--dependency NAME]",
		Short: "Show the circuit breakers of a pipeline, or one dependency's in full (read only)",
		Long: `status without --dependency lists every dependency of the pipeline whose
breaker state was ever stored (one read of the pipeline's index item, then
one a dependency; never a scan): the first step after a breaker-open alarm.
A dependency that never failed under the breaker and was never forced has
no state, and its breaker is closed. With --dependency it shows that one
in full.`,
		Example: "  agentdlq breaker status --pipeline agent-tasks\n  agentdlq breaker status --pipeline agent-tasks --dependency search-api\n  agentdlq breaker status --pipeline agent-tasks -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if pipelineName == "" {
				return withExit(exitRefused, errors.New("--pipeline is required"))
			}
			p, err := g.loadPipeline(pipelineName)
			if err != nil {
				return withExit(exitRefused, err)
			}
			st, err := breakerStore(ctx, table)
			if err != nil {
				return err
			}
			if dep == "" {
				list, err := breaker.List(ctx, st, p.Name)
				if err != nil {
					return err
				}
				if out.JSON() {
					return writeJSON(cmd.OutOrStdout(), map[string]any{"pipeline": p.Name, "enabled": p.Breaker.Enabled, "breakers": list})
				}
				printBreakers(cmd.OutOrStdout(), p.Name, p.Breaker, list, time.Now())
				return nil
			}
			s, err := st.Get(ctx, p.Name, dep)
			if err != nil {
				return err
			}
			if out.JSON() {
				return writeJSON(cmd.OutOrStdout(), map[string]any{"pipeline": p.Name, "dependency": dep, "enabled": p.Breaker.Enabled, "state": s})
			}
			printBreaker(cmd.OutOrStdout(), p.Name, dep, p.Breaker, s, time.Now())
			return nil
		},
	}
	c.Flags().StringVar(&pipelineName, "pipeline", "", "pipeline name (required)")
	c.Flags().StringVar(&dep, "dependency", "", "dependency name (default: list every dependency's breaker)")
	c.Flags().StringVar(&table, "ledger-table", "", "the ledger table (default $AGENTDLQ_LEDGER_TABLE; agentdlq-ledger with local endpoints)")
	out = addOutput(c, formatTable, formatJSON)
	return c
}

func newBreakerForceCmd(g *globalFlags, open bool) *cobra.Command {
	f := &redriveFlags{g: g}
	var dep string
	var out *output
	use, short, action := "close", "Close a dependency's breaker: its tasks come back over the ramp", audit.ActionBreakerClose
	if open {
		use, short, action = "open", "Hold a dependency's breaker open until the owner closes it: its tasks are deferred, no receive spent", audit.ActionBreakerOpen
	}
	c := &cobra.Command{
		Use:     use + " --pipeline NAME --dependency NAME --owner WHO --why TEXT",
		Short:   short,
		Example: "  agentdlq breaker " + use + " --pipeline agent-tasks --dependency search-api --owner platform-oncall --why \"provider incident INC-77\"",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			who := redrive.Who{Owner: f.owner, Why: f.why}
			r, err := f.open(ctx, action, who, nil)
			if err != nil {
				return err
			}
			st, err := breakerStore(ctx, f.ledgerTable)
			if err != nil {
				return err
			}
			res, err := r.ForceBreaker(ctx, redrive.BreakerRequest{Who: who, Dependency: dep, Open: open, Store: st})
			if err != nil {
				return err
			}
			if out.JSON() {
				return writeJSON(cmd.OutOrStdout(), res)
			}
			p, _ := g.loadPipeline(f.pipeline)
			var bs pipeline.Breaker
			if p != nil {
				bs = p.Breaker
			}
			printBreaker(cmd.OutOrStdout(), f.pipeline, dep, bs, res.After, time.Now())
			return nil
		},
	}
	c.RunE = refusalsInFlags(f, c.RunE)
	c.Flags().StringVar(&f.pipeline, "pipeline", "", "pipeline name (required)")
	c.Flags().StringVar(&dep, "dependency", "", "dependency name (required)")
	c.Flags().StringVar(&f.audit, "audit", "", "audit store: a JSONL file, or s3://bucket/prefix ("+outHelp("audit/<pipeline>.jsonl")+")")
	c.Flags().StringVar(&f.ledgerTable, "ledger-table", "", "the ledger table (default $AGENTDLQ_LEDGER_TABLE; agentdlq-ledger with local endpoints)")
	out = addOutput(c, formatTable, formatJSON)
	c.Flags().StringVar(&f.owner, "owner", "", "who acts: must be the pipeline's owner (required)")
	c.Flags().StringVar(&f.why, "why", "", "why: the provider's incident or its recovery (required)")
	return c
}

// breakerSwitch is how a text line names the pipeline's breaker setting.
func breakerSwitch(enabled bool) string {
	if enabled {
		return "on"
	}
	return "off in pipelines.json: the worker does not read it"
}

// printBreakers writes the breakers of a pipeline as a table, open and
// half-open first, with the commands to go further.
func printBreakers(w io.Writer, pipelineName string, bs pipeline.Breaker, list []breaker.Entry, now time.Time) {
	esc, enabled, window := textutil.Escape, bs.Enabled, bs.Settings().WithDefaults().Window
	if len(list) == 0 {
		fmt.Fprintf(w, "breakers of %s (breaker %s): no dependency of %s has a stored breaker state.\n", pipelineName, breakerSwitch(enabled), pipelineName)
		fmt.Fprintln(w, "  None has failed under the breaker (dependency_open, rate_limited, auth_config, a Retry-After) or been forced by its owner, ever: every one is closed.")
		return
	}
	rank := map[breaker.Mode]int{breaker.Open: 0, breaker.HalfOpen: 1, breaker.Closed: 2}
	sorted := slices.Clone(list)
	slices.SortStableFunc(sorted, func(a, b breaker.Entry) int { return rank[modeOf(a.State)] - rank[modeOf(b.State)] })
	notClosed := 0
	for _, e := range sorted {
		if modeOf(e.State) != breaker.Closed {
			notClosed++
		}
	}
	deps := "dependencies"
	if len(list) == 1 {
		deps = "dependency"
	}
	fmt.Fprintf(w, "breakers of %s (breaker %s): %d %s, %d not closed\n", pipelineName, breakerSwitch(enabled), len(list), deps, notClosed)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DEPENDENCY\tMODE\tSINCE\tCAUSE\tUNTIL\tFAILURES\tPROBES\tFORCED BY")
	for _, e := range sorted {
		s := e.State
		mode := modeOf(s)
		since, cause, until, failures, probes, forced := "-", "-", "-", "-", "-", "-"
		if !s.Changed.IsZero() {
			since = s.Changed.UTC().Format(time.RFC3339) + " (" + now.Sub(s.Changed).Round(time.Second).String() + " ago)"
		}
		if s.Cause != "" {
			cause = esc(s.Cause)
		}
		switch mode {
		case breaker.Open:
			until = s.Until.UTC().Format(time.RFC3339)
			if s.Held {
				until = "held: until the owner closes it"
			}
		case breaker.HalfOpen:
			probes = fmt.Sprintf("%d admitted, %d passed", s.Probes, s.Passed)
		default:
			if n := s.FailuresAt(window, now); n > 0 {
				failures = fmt.Sprintf("%d in the last %s, %s", n, window, breaker.TenantsText(s.TenantsAt(window, now)))
			}
		}
		if s.Owner != "" {
			forced = esc(s.Owner) + ": " + esc(s.Why)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", esc(e.Dependency), esc(string(mode)), since, cause, until, failures, probes, forced)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "One in full: agentdlq breaker status --pipeline %s --dependency NAME; hold open or close: agentdlq breaker open|close (the owner, gated).\n", pipelineName)
}

// modeOf is s.Mode with "" read as closed.
func modeOf(s breaker.State) breaker.Mode {
	if s.Mode == "" {
		return breaker.Closed
	}
	return s.Mode
}

// printBreaker writes one breaker's state as text, under the pipeline's
// breaker settings bs.
func printBreaker(w io.Writer, pipelineName, dep string, bs pipeline.Breaker, s breaker.State, now time.Time) {
	enabled, window := bs.Enabled, bs.Settings().WithDefaults().Window
	mode := s.Mode
	if mode == "" {
		mode = breaker.Closed
	}
	on := "on"
	if !enabled {
		on = "off in pipelines.json: the worker does not read it"
	}
	dep = textutil.Escape(dep)
	fmt.Fprintf(w, "breaker %s/%s: %s (breaker %s)\n", pipelineName, dep, textutil.Escape(string(mode)), on)
	switch mode {
	case breaker.Open:
		if s.Held {
			fmt.Fprintf(w, "  held open by %s: %s (until the owner closes it)\n", textutil.Escape(s.Owner), textutil.Escape(s.Why))
		} else {
			fmt.Fprintf(w, "  open until %s (%s from now): the tasks that need %s are deferred, no receive spent\n",
				s.Until.UTC().Format(time.RFC3339), s.Until.Sub(now).Round(time.Second), dep)
		}
	case breaker.HalfOpen:
		fmt.Fprintf(w, "  probing since %s: %d probes admitted, %d passed\n", s.ProbeSince.UTC().Format(time.RFC3339), s.Probes, s.Passed)
	default:
		if !s.RampFrom.IsZero() {
			fmt.Fprintf(w, "  ramping since %s\n", s.RampFrom.UTC().Format(time.RFC3339))
		}
		if n := s.FailuresAt(window, now); n > 0 {
			set := bs.Settings().WithDefaults()
			least := "tenants"
			if set.MinTenants == 1 {
				least = "tenant"
			}
			fmt.Fprintf(w, "  %d failures in the last %s, %s (it opens at %d of at least %d %s)\n",
				n, window, breaker.TenantsText(s.TenantsAt(window, now)), set.Threshold, set.MinTenants, least)
		}
	}
	if !s.Changed.IsZero() {
		fmt.Fprintf(w, "  last change %s: %s (version %d)\n", s.Changed.UTC().Format(time.RFC3339), textutil.Escape(s.Cause), s.Version)
	}
	if s.Owner != "" && !s.Held {
		fmt.Fprintf(w, "  last forced by %s: %s\n", textutil.Escape(s.Owner), textutil.Escape(s.Why))
	}
}
