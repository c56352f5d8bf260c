package batch

import (
	"encoding/json"
	"strconv"

	"github.com/agentdlq/agentdlq/events/deadletter"
)

// Metric names and the namespace, as docs/wiring.md pins them.
const (
	MetricNamespace         = "AgentDLQ"
	MetricProcessed         = "Processed"
	MetricRetried           = "Retried"
	MetricDeadLettered      = "DeadLettered"
	MetricDLQSendFailures   = "DLQSendFailures"
	MetricDuplicatesSkipped = "DuplicatesSkipped"
	MetricRequeued          = "Requeued"
)

// counters are one invocation's metrics.
//
//   - Processed: records the handler finished (acknowledged);
//   - DuplicatesSkipped: records acknowledged as no-ops (key already done);
//   - Retried: records reported as batch item failures, for any cause
//     (retryable failure, ledger outage, FIFO group held, failed DLQ send);
//   - DeadLettered: records sent to the DLQ (and by Reason);
//   - DLQSendFailures: dead letters whose send failed (they are also Retried);
//   - Requeued: records sent back to the hot queue after the provider's
//     Retry-After, not counted against the budget (Config.RetryAfterRequeues;
//     the original is acknowledged).
type counters struct {
	processed, retried, deadLettered, dlqSendFailures, duplicates, requeued int
	byReason                                                                [maxReasons]int

	// dlq holds the lane's dead letters until they are sent (flush); the
	// counts above of a dead letter are taken when it is.
	dlq *outbox
}

const maxReasons = 32

// add adds o's counts to c.
func (c *counters) add(o *counters) {
	c.processed += o.processed
	c.retried += o.retried
	c.deadLettered += o.deadLettered
	c.dlqSendFailures += o.dlqSendFailures
	c.duplicates += o.duplicates
	c.requeued += o.requeued
	for i, n := range o.byReason {
		c.byReason[i] += n
	}
}

var allReasons = deadletter.AllReasons()

func reasonIndex(r deadletter.Reason) int {
	for i, x := range allReasons {
		if x == r {
			return i
		}
	}
	return len(allReasons) // never: every reason the processor writes is known
}

// emit writes the invocation's metrics in CloudWatch embedded metric
// format: one document with the Pipeline dimension, and one per reason
// dead-lettered in this invocation with the Pipeline and Reason dimensions
// (a document carries one value per dimension).
func (p *Processor) emit(m *counters) {
	ts := p.now().UnixMilli()
	buf := make([]byte, 0, 512)
	buf = append(buf, `{"_aws":{"Timestamp":`...)
	buf = strconv.AppendInt(buf, ts, 10)
	buf = append(buf, `,"CloudWatchMetrics":[{"Namespace":"`+MetricNamespace+`","Dimensions":[["Pipeline"]],"Metrics":[`+
		`{"Name":"`+MetricProcessed+`","Unit":"Count"},{"Name":"`+MetricRetried+`","Unit":"Count"},`+
		`{"Name":"`+MetricDeadLettered+`","Unit":"Count"},{"Name":"`+MetricDLQSendFailures+`","Unit":"Count"},`+
		`{"Name":"`+MetricRequeued+`","Unit":"Count"},{"Name":"`+MetricDuplicatesSkipped+`","Unit":"Count"}]}]},"Pipeline":`...)
	buf = append(buf, p.pipelineKey...)
	for _, kv := range [...]struct {
		name string
		v    int
	}{{MetricProcessed, m.processed}, {MetricRetried, m.retried}, {MetricDeadLettered, m.deadLettered}, {MetricDLQSendFailures, m.dlqSendFailures}, {MetricRequeued, m.requeued}, {MetricDuplicatesSkipped, m.duplicates}} {
		buf = append(buf, `,"`...)
		buf = append(buf, kv.name...)
		buf = append(buf, `":`...)
		buf = strconv.AppendInt(buf, int64(kv.v), 10)
	}
	buf = append(buf, "}\n"...)
	for i, n := range m.byReason {
		if n == 0 || i >= len(allReasons) {
			continue
		}
		buf = append(buf, `{"_aws":{"Timestamp":`...)
		buf = strconv.AppendInt(buf, ts, 10)
		buf = append(buf, `,"CloudWatchMetrics":[{"Namespace":"`+MetricNamespace+`","Dimensions":[["Pipeline","Reason"]],"Metrics":[{"Name":"`+MetricDeadLettered+`","Unit":"Count"}]}]},"Pipeline":`...)
		buf = append(buf, p.pipelineKey...)
		buf = append(buf, `,"Reason":"`...)
		buf = append(buf, allReasons[i]...)
		buf = append(buf, `","`+MetricDeadLettered+`":`...)
		buf = strconv.AppendInt(buf, int64(n), 10)
		buf = append(buf, "}\n"...)
	}
	_, _ = p.metrics.Write(buf) // a lost metric line never fails a batch
}

func quoteJSON(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

func itoa(n int) string { return strconv.Itoa(n) }
