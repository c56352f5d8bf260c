package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/agentdlq/agentdlq/local/esm"
)

// workSummary is what agentdlq work prints at the end: what became of the
// records received, in the worker's words (its metrics) and the event
// source mapping's, so that a record that was only retried is never
// called failed.
type workSummary struct {
	Pipeline string `json:"pipeline"`
	Batches  int64  `json:"batches"`  // handler invocations
	Received int64  `json:"received"` // records received (a redelivered message counts again)
	// Processed and DuplicatesSkipped were acknowledged: done, or a no-op
	// for a key the ledger already holds as done.
	Processed         int64 `json:"processed"`
	DuplicatesSkipped int64 `json:"duplicates_skipped"`
	// DeadLettered were sent to the DLQ by the worker, with their reason.
	DeadLettered         int64            `json:"dead_lettered"`
	DeadLetteredByReason map[string]int64 `json:"dead_lettered_by_reason,omitempty"`
	// Retried were left to their visibility timeout (a batch item failure,
	// or a whole batch that failed): received again, and dead-lettered on
	// their last receive if the failure lasts.
	Retried int64 `json:"retried"`
	// DLQSendFailures are dead letters whose send failed: retried, not lost.
	DLQSendFailures int64 `json:"dlq_send_failures"`
	// Requeued were sent back to the hot queue after the provider's
	// Retry-After (retry_after_requeues) and acknowledged: the copy is
	// received again, the receive not counted.
	Requeued      int64 `json:"requeued,omitempty"`
	Deleted       int64 `json:"deleted"`      // records deleted from the hot queue
	BatchErrors   int64 `json:"batch_errors"` // invocations that failed as a whole
	DeleteErrors  int64 `json:"delete_errors"`
	ReceiveErrors int64 `json:"receive_errors"`
	// EventSourceMapping are the same records under the names of the
	// deployed event source mapping's metrics (PolledEventCount …, the
	// dashboard's and the esm-* alarms'). Lambda's FailedInvokeEventCount
	// is Retried here: records that came back failed and will be received
	// again.
	EventSourceMapping esm.EventCounts `json:"event_source_mapping"`
}

func newWorkSummary(pipelineName string, s esm.Stats, m *metricCounts) workSummary {
	w := workSummary{
		Pipeline: pipelineName, Batches: s.Batches, Received: s.Received, Retried: s.Failed, Deleted: s.Deleted,
		BatchErrors: s.BatchErrors, DeleteErrors: s.DeleteErrors, ReceiveErrors: s.ReceiveErrors,
		EventSourceMapping: s.EventCounts(),
	}
	if m != nil {
		m.mu.Lock()
		defer m.mu.Unlock()
		w.Processed, w.DuplicatesSkipped, w.DeadLettered, w.DLQSendFailures = m.processed, m.duplicates, m.deadLettered, m.dlqSendFailures
		w.Requeued = m.requeued
		if len(m.byReason) > 0 {
			w.DeadLetteredByReason = make(map[string]int64, len(m.byReason))
			for r, n := range m.byReason {
				w.DeadLetteredByReason[r] = n
			}
		}
	}
	return w
}

// writeTable prints the summary as -o table does: one column per count of
// the JSON, and the dead letters by reason on a line under it.
func (w workSummary) writeTable(out io.Writer) {
	writeTable(out, []string{"pipeline", "invocations", "received", "processed", "duplicates", "dead-lettered", "retried", "dlq send failures", "deleted", "batch errors", "delete errors", "receive errors"},
		[][]string{{w.Pipeline, fmt.Sprint(w.Batches), fmt.Sprint(w.Received), fmt.Sprint(w.Processed), fmt.Sprint(w.DuplicatesSkipped),
			fmt.Sprint(w.DeadLettered), fmt.Sprint(w.Retried), fmt.Sprint(w.DLQSendFailures), fmt.Sprint(w.Deleted),
			fmt.Sprint(w.BatchErrors), fmt.Sprint(w.DeleteErrors), fmt.Sprint(w.ReceiveErrors)}})
	e := w.EventSourceMapping
	fmt.Fprintf(out, "event source mapping (as its metrics): PolledEventCount %d, InvokedEventCount %d, FailedInvokeEventCount %d (retried), DroppedEventCount %d, DeletedEventCount %d\n",
		e.PolledEventCount, e.InvokedEventCount, e.FailedInvokeEventCount, e.DroppedEventCount, e.DeletedEventCount)
	if len(w.DeadLetteredByReason) == 0 {
		return
	}
	reasons := make([]string, 0, len(w.DeadLetteredByReason))
	for r := range w.DeadLetteredByReason {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	parts := make([]string, len(reasons))
	for i, r := range reasons {
		parts[i] = fmt.Sprintf("%s %d", r, w.DeadLetteredByReason[r])
	}
	fmt.Fprintf(out, "dead-lettered by reason: %s\n", strings.Join(parts, ", "))
}

// metricCounts passes the worker's metric lines (embedded metric format)
// on to w and sums them: the worker is the one that knows whether a record
// it did not finish was retried or dead-lettered.
type metricCounts struct {
	w io.Writer

	mu                                                                      sync.Mutex
	partial                                                                 []byte
	processed, retried, deadLettered, dlqSendFailures, duplicates, requeued int64
	byReason                                                                map[string]int64
}

func newMetricCounts(w io.Writer) *metricCounts {
	return &metricCounts{w: w, byReason: map[string]int64{}}
}

// emfLine is the part of a metric line the summary reads: batch's metric
// names (batch.MetricProcessed …; TestEMFLineNamesBatchMetrics holds them).
type emfLine struct {
	AWS               json.RawMessage `json:"_aws"`
	Reason            string          `json:"Reason"`
	Processed         int64           `json:"Processed"`
	Retried           int64           `json:"Retried"`
	DeadLettered      int64           `json:"DeadLettered"`
	DLQSendFailures   int64           `json:"DLQSendFailures"`
	DuplicatesSkipped int64           `json:"DuplicatesSkipped"`
	Requeued          int64           `json:"Requeued"`
}

func (m *metricCounts) Write(p []byte) (int, error) {
	m.mu.Lock()
	m.partial = append(m.partial, p...)
	for {
		i := bytes.IndexByte(m.partial, '\n')
		if i < 0 {
			break
		}
		m.add(m.partial[:i])
		m.partial = m.partial[i+1:]
	}
	m.mu.Unlock()
	return m.w.Write(p)
}

// add counts one line: the pipeline's document, or a reason's, whose
// DeadLettered is a part of the pipeline's.
func (m *metricCounts) add(line []byte) {
	var l emfLine
	if json.Unmarshal(line, &l) != nil || l.AWS == nil {
		return // not a metric line
	}
	if l.Reason != "" {
		m.byReason[l.Reason] += l.DeadLettered
		return
	}
	m.processed += l.Processed
	m.retried += l.Retried
	m.deadLettered += l.DeadLettered
	m.dlqSendFailures += l.DLQSendFailures
	m.duplicates += l.DuplicatesSkipped
	m.requeued += l.Requeued
}
