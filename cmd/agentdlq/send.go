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
	// FromLine is --from-line when given (the tasks before it were skipped).
	FromLine int `json:"from_line,omitempty"`
}

// sendFailed is `agentdlq send`'s error when SQS refused a request part-way:
// how many were sent, and the --from-line a rerun takes.
type sendFailed struct {
	se         *workload.SendError
	resumeLine int // the input line (element, record) of the first task not sent
}

func (e *sendFailed) Error() string {
	msg := fmt.Sprintf("send: %d of %d messages sent; the first not sent is at input line %d: rerun with --from-line %d to send the rest", e.se.Sent, e.se.Total, e.resumeLine, e.resumeLine)
	if e.se.SentAfter > 0 {
		msg += fmt.Sprintf(" (%d messages after it were sent too: the rerun sends them again)", e.se.SentAfter)
	}
	return msg + ": " + e.se.Err.Error()
}

func (e *sendFailed) Unwrap() error { return e.se }

func newSendCmd(g *globalFlags) *cobra.Command {
	var (
		name     string
		fromLine int
		out      *output
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
deduplication id.

Each SendMessageBatch request holds at most 10 messages and 1 MiB of bodies
(SQS's limits per request). When SQS refuses a request part-way, send stops
starting requests, says how many messages were sent and from which line
(JSON Lines; the element of a JSON array, the record of an event) a rerun
resumes, and exits 1: rerun with --from-line N to send the rest, and only
the rest.`,
		Example: `  agentdlq send --pipeline agent-tasks events/testdata/sqs-mixed.json
  agentdlq send --pipeline agent-tasks tasks.jsonl
  printf '%s\n' "$TASK_JSON" | agentdlq send --pipeline agent-tasks -
  agentdlq send --pipeline agent-tasks tasks.jsonl -o json   # {"pipeline":…,"queue_url":…,"sent":N}
  agentdlq send --pipeline agent-tasks tasks.jsonl --from-line 2741   # after a failure said so`,
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
			if fromLine > 0 {
				kept := tasks[:0]
				for _, t := range tasks {
					if t.Line >= fromLine {
						kept = append(kept, t)
					}
				}
				if len(kept) == 0 {
					return withExit(2, fmt.Errorf("--from-line %d: the input has nothing from there (its last message is at %d)", fromLine, tasks[len(tasks)-1].Line))
				}
				tasks = kept
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
			sent, err := workload.SendProgress(ctx, client, q.HotURL, q.FIFO, tasks, 4, bar.Add)
			bar.Finish()
			if se, ok := errors.AsType[*workload.SendError](err); ok && se.Resume < len(tasks) {
				return &sendFailed{se: se, resumeLine: tasks[se.Resume].Line}
			}
			if err != nil {
				return err
			}
			res := sendResult{Pipeline: p.Name, QueueURL: q.HotURL, Sent: len(sent), FromLine: fromLine}
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
	cmd.Flags().IntVar(&fromLine, "from-line", 0, "send only the messages from this input line on (the element of a JSON array, the record of an event): where a failed send said to resume")
	out = addOutput(cmd, formatTable, formatJSON, formatMarkdown)
	_ = cmd.MarkFlagRequired("pipeline")
	return cmd
}
