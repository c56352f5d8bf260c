package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/spf13/cobra"

	"github.com/agentdlq/agentdlq/internal/awscfg"
	"github.com/agentdlq/agentdlq/internal/textutil"
	"github.com/agentdlq/agentdlq/local/topology"
	"github.com/agentdlq/agentdlq/local/workload"
)

// sendResult is what `agentdlq send` prints.
type sendResult struct {
	Pipeline string `json:"pipeline"`
	QueueURL string `json:"queue_url"`
	Sent     int    `json:"sent"`
}

func newSendCmd(g *globalFlags) *cobra.Command {
	var (
		name string
		out  *output
	)
	cmd := &cobra.Command{
		Use:   "send --pipeline NAME FILE|-",
		Short: "Send agent tasks onto a pipeline's hot queue (JSON Lines, a JSON array, or a Lambda SQS event)",
		Long: `send puts message bodies onto the pipeline's hot queue, locally (the emulators
of make local-up) or in AWS, ten a call, with a progress bar on a terminal. The
input is a file, or - for stdin, in one of three shapes detected from the content:

  a Lambda SQS event   {"Records":[{"body":"…"}, …]}: each record's body
  a JSON array         each string element is a body; any other element is sent
                       as its JSON text
  JSON Lines           each non-empty line is a body, byte for byte

Bodies are sent as they are, valid or not: the worker classifies them. On a
FIFO queue each task's run_id is its message group and its task_id the
deduplication id. On a standard queue each task's tenant is its message group
(SQS fair queues: one tenant's backlog does not hold up the others), unless
the pipeline sets fair_queue_tenant to false.`,
		Example: `  agentdlq send --pipeline agent-tasks events/testdata/sqs-mixed.json
  agentdlq send --pipeline agent-tasks tasks.jsonl
  printf '%s\n' "$TASK_JSON" | agentdlq send --pipeline agent-tasks -
  agentdlq send --pipeline agent-tasks tasks.jsonl -o json   # {"pipeline":…,"queue_url":…,"sent":N}`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			p, err := g.loadPipeline(name)
			if err != nil {
				return withExit(2, err)
			}
			var tasks []workload.Task
			if args[0] == "-" {
				tasks, err = workload.Read("stdin", c.InOrStdin())
			} else {
				tasks, err = workload.ReadFile(args[0])
			}
			if errors.Is(err, fs.ErrNotExist) {
				return withExit(2, fmt.Errorf("%s: no such file: give a file of tasks (JSON Lines, a JSON array or a Lambda SQS event), or - for stdin", args[0]))
			}
			if err != nil {
				return withExit(2, err)
			}
			ctx := c.Context()
			cfg, err := awscfg.Load(ctx)
			if err != nil {
				return fmt.Errorf("aws config: %w", err)
			}
			client := sqs.NewFromConfig(cfg)
			q, err := topology.ResolveWith(ctx, client, p, topology.OverrideFromEnv(os.Getenv))
			if err != nil {
				if errors.Is(err, topology.ErrNotFound) {
					return withExit(2, fmt.Errorf("pipeline %q: %w (locally: make local-up creates the queues)", p.Name, err))
				}
				return fmt.Errorf("pipeline %q: %w", p.Name, err)
			}
			bar := g.newBar(c.ErrOrStderr(), int64(len(tasks)), "sending")
			if !q.FIFO {
				tasks = workload.FairQueue(p, tasks) // the tenant as MessageGroupId (fair_queue_tenant)
			}
			sent, err := workload.SendProgress(ctx, client, q.HotURL, q.FIFO, tasks, 4, bar.Add)
			bar.Finish()
			if err != nil {
				return err
			}
			res := sendResult{Pipeline: p.Name, QueueURL: q.HotURL, Sent: len(sent)}
			switch {
			case out.JSON():
				return writeJSON(c.OutOrStdout(), res)
			case out.Markdown():
				return mdTable(c.OutOrStdout(), []string{"pipeline", "queue", "sent"},
					[][]string{{res.Pipeline, res.QueueURL, fmt.Sprint(res.Sent)}})
			}
			fmt.Fprintf(c.OutOrStdout(), "sent %s to %s (pipeline %s)\n", textutil.Count(res.Sent, "message", "messages"), res.QueueURL, res.Pipeline)
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "pipeline", "", "pipeline of the definition file (required)")
	out = addOutput(cmd, formatTable, formatJSON, formatMarkdown)
	_ = cmd.MarkFlagRequired("pipeline")
	return cmd
}
