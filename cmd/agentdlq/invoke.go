package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/spf13/cobra"

	"github.com/agentdlq/agentdlq/functions/batch"
	"github.com/agentdlq/agentdlq/functions/sampleworker"
	"github.com/agentdlq/agentdlq/internal/sqsio"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/pipeline"
)

// runFlags are the flags invoke and bench share.
type runFlags struct {
	event           string
	maxReceiveCount int
	fifo            bool
	verbose         bool
}

func (f *runFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.event, "event", "", "Lambda SQS event file (JSON, as Lambda delivers it) (required)")
	cmd.Flags().IntVar(&f.maxReceiveCount, "max-receive-count", 4, "the hot queue's maxReceiveCount: a retryable failure on this receive is dead-lettered")
	cmd.Flags().BoolVar(&f.fifo, "fifo", false, "treat the queue as FIFO (also implied by a .fifo eventSourceARN)")
	_ = cmd.MarkFlagRequired("event")
}

func newInvokeCmd(g *globalFlags) *cobra.Command {
	f := &runFlags{}
	var out *output
	cmd := &cobra.Command{
		Use:   "invoke --event FILE [--max-receive-count N] [--fifo] [-o json|table]",
		Short: "Run the real worker handler on a Lambda SQS event file and print what it did",
		Long: `invoke runs the worker's Lambda handler on an SQS event file, with an
in-memory idempotency ledger and a DLQ that records instead of sending, and
prints the partial batch response and the dead letters as JSON:

  {"batchItemFailures":[{"itemIdentifier":"..."}],
   "deadLetters":[{"messageId":"...","reason":"...","meta":{...}}]}

A record in neither list was acknowledged. -o table prints one row a record
instead: acknowledged, retried (a batch item failure) or dead-lettered with
its reason. --verbose writes the worker's own logs and metrics (JSON, as in
Lambda) to stderr. A file that is not an SQS event is refused with an error
and exit code 2.`,
		Example: `  agentdlq invoke --event events/testdata/sqs-mixed.json
  agentdlq invoke --event events/testdata/sqs-mixed.json -o table
  agentdlq invoke --event events/testdata/sqs-mixed.json --max-receive-count 1 --verbose`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.verbose = g.verbose
			ev, err := readSQSEvent(f.event)
			if err != nil {
				return withExit(2, err)
			}
			rec := &sqsio.Recorder{}
			w, err := newLocalWorker(f, ev, ledger.NewMemory(), rec, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			resp, err := w.Handle(cmd.Context(), ev)
			if err != nil {
				return withExit(2, fmt.Errorf("%s: %w", f.event, err))
			}
			dls, err := rec.DeadLetters()
			if err != nil {
				return err
			}
			res := invokeOutput{BatchItemFailures: resp.BatchItemFailures, DeadLetters: dls}
			if res.BatchItemFailures == nil {
				res.BatchItemFailures = []events.SQSBatchItemFailure{}
			}
			if out.JSON() {
				return writeJSON(cmd.OutOrStdout(), res)
			}
			writeTable(cmd.OutOrStdout(), []string{"record", "outcome", "reason"}, invokeRows(ev, res))
			return nil
		},
	}
	f.register(cmd)
	out = addOutput(cmd, formatJSON, formatTable)
	return cmd
}

type invokeOutput struct {
	BatchItemFailures []events.SQSBatchItemFailure `json:"batchItemFailures"`
	DeadLetters       []sqsio.DeadLetter           `json:"deadLetters"`
}

// invokeRows is what became of each record of ev, in event order.
func invokeRows(ev events.SQSEvent, res invokeOutput) [][]string {
	retried := map[string]bool{}
	for _, f := range res.BatchItemFailures {
		retried[f.ItemIdentifier] = true
	}
	dead := map[string]string{}
	for _, d := range res.DeadLetters {
		dead[d.MessageID] = string(d.Reason)
	}
	rows := make([][]string, 0, len(ev.Records))
	for _, r := range ev.Records {
		switch {
		case retried[r.MessageId]:
			rows = append(rows, []string{r.MessageId, "retried", "-"})
		case dead[r.MessageId] != "":
			rows = append(rows, []string{r.MessageId, "dead-lettered", dead[r.MessageId]})
		default:
			rows = append(rows, []string{r.MessageId, "acknowledged", "-"})
		}
	}
	return rows
}

// readSQSEvent reads a Lambda SQS event file, refusing with a clear error
// anything that is not one. It decodes the file once, straight into the
// event (a 10,000-record file is 20 MB: a second copy would double the peak
// memory that `agentdlq bench` reports).
func readSQSEvent(path string) (events.SQSEvent, error) {
	var ev events.SQSEvent
	data, err := os.ReadFile(path)
	if err != nil {
		return ev, err
	}
	var doc struct {
		Records *[]events.SQSMessage `json:"Records"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te) && te.Field == "":
			return ev, fmt.Errorf("%s: not an SQS event: not a JSON object: %w", path, err)
		case errors.As(err, &te) && te.Field == "Records":
			return ev, fmt.Errorf("%s: not an SQS event: no \"Records\" array", path)
		case !json.Valid(data):
			return ev, fmt.Errorf("%s: not an SQS event: not a JSON object: %w", path, err)
		}
		return ev, fmt.Errorf("%s: not an SQS event: %w", path, err)
	}
	if doc.Records == nil {
		return ev, fmt.Errorf("%s: not an SQS event: no \"Records\" array", path)
	}
	ev.Records = *doc.Records
	if err := batch.CheckSQSEvent(ev); err != nil {
		return ev, fmt.Errorf("%s: %w", path, err)
	}
	return ev, nil
}

// newLocalWorker builds the real worker with a recording DLQ and the given
// ledger, for a pipeline made from the flags.
func newLocalWorker(f *runFlags, ev events.SQSEvent, l ledger.Ledger, rec *sqsio.Recorder, stderr io.Writer) (*sampleworker.Worker, error) {
	if f.maxReceiveCount < 1 || f.maxReceiveCount > 1000 {
		return nil, withExit(2, fmt.Errorf("--max-receive-count %d is outside 1..1000", f.maxReceiveCount))
	}
	fifo := f.fifo
	for _, r := range ev.Records {
		if strings.HasSuffix(r.EventSourceARN, ".fifo") {
			fifo = true
		}
	}
	p := &pipeline.Pipeline{Name: "invoke", Owner: "local", FIFO: fifo}
	p.ApplyDefaults()
	p.MaxReceiveCount = f.maxReceiveCount
	q := pipeline.Queues{HotURL: "local://" + p.HotQueueName(), DLQURL: "local://" + p.DLQName(), FIFO: fifo}
	logs, metrics := io.Discard, io.Discard
	if f.verbose {
		logs, metrics = stderr, stderr
	}
	return sampleworker.New(sampleworker.Config{
		Pipeline: p, Queues: q, SQS: rec, Ledger: l, WorkerVersion: "agentdlq-cli",
		Logger: slog.New(batch.NewLogHandler(logs, nil)), Metrics: metrics,
	})
}
