package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/agentdlq/agentdlq/internal/awscfg"
	"github.com/agentdlq/agentdlq/internal/topology"
	"github.com/agentdlq/agentdlq/internal/workload"
)

// sendResult is what `agentdlq send` prints.
type sendResult struct {
	Pipeline string `json:"pipeline"`
	QueueURL string `json:"queue_url"`
	Sent     int    `json:"sent"`
}

func newSendCmd(g *globalFlags) *cobra.Command {
	var (
		name    string
		jsonOut bool
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
deduplication id.`,
		Example: `  agentdlq send --pipeline agent-tasks events/testdata/sqs-mixed.json
  agentdlq send --pipeline agent-tasks tasks.jsonl
  printf '%s\n' "$TASK_JSON" | agentdlq send --pipeline agent-tasks -`,
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
			onSent := func(int) {}
			var bar *progressbar.ProgressBar
			if f, ok := c.ErrOrStderr().(*os.File); ok && term.IsTerminal(int(f.Fd())) {
				bar = newProgress(f, len(tasks), "sending")
				onSent = func(n int) { _ = bar.Add(n) }
			}
			sent, err := workload.SendProgress(ctx, client, q.HotURL, q.FIFO, tasks, 4, onSent)
			if bar != nil {
				_ = bar.Finish()
				fmt.Fprintln(c.ErrOrStderr())
			}
			if err != nil {
				return err
			}
			res := sendResult{Pipeline: p.Name, QueueURL: q.HotURL, Sent: len(sent)}
			if jsonOut {
				return writeJSON(c.OutOrStdout(), res)
			}
			fmt.Fprintf(c.OutOrStdout(), "sent %d messages to %s (pipeline %s)\n", res.Sent, res.QueueURL, res.Pipeline)
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "pipeline", "", "pipeline of the definition file (required)")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the result as JSON")
	_ = cmd.MarkFlagRequired("pipeline")
	return cmd
}

// newProgress is a progress bar of a known total on w: count, rate and
// time left, redrawn at most ten times a second so that the first tick does
// not read as an absurd rate.
func newProgress(w io.Writer, total int, what string) *progressbar.ProgressBar {
	return progressbar.NewOptions(total,
		progressbar.OptionSetWriter(w), progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString("msg"),
		progressbar.OptionSetPredictTime(true), progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionFullWidth())
}

// writeJSON prints v as indented JSON without escaping <, > and &.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
