// Package benchsum reads the outcome of a bench's last invocation the same
// way for the two benches that print one (`agentdlq bench` in cmd/agentdlq
// and the worker-only bench, functions/sampleworker/bench): the failures by
// kind, the dead letters by reason and the ok_digest, the proof that the
// peer's bench (scripts/peer-bench) succeeded on the same records with the
// same work.
package benchsum

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"iter"

	"github.com/aws/aws-lambda-go/events"

	"github.com/agentdlq/agentdlq/events/agenttask"
	"github.com/agentdlq/agentdlq/internal/sqsio"
)

// Failures counts the records that did not succeed, by kind: dead-lettered
// at once (poison), left to be retried (transient) and dead-lettered on the
// last allowed receive (exhausted).
type Failures struct {
	Poison    int `json:"poison"`
	Transient int `json:"transient"`
	Exhausted int `json:"exhausted"`
}

// Outcome is what one invocation did to its records.
type Outcome struct {
	Failures    Failures
	DeadLetters map[string]int // by reason
	// OKDigest is the hex SHA-256 over "<message id>:<hex SHA-256 of the
	// task's args>\n" of every record that succeeded, in event order: what
	// scripts/peer-bench/bench.mjs computes for the records it succeeded on.
	OKDigest string
}

// Summarize reads the invocation's response and the dead letters its
// recording DLQ kept; records yields every record's message id and body,
// in event order. A record that neither failed nor was dead-lettered must
// hold a task that decodes.
func Summarize(resp events.SQSEventResponse, dlq *sqsio.Recorder, records iter.Seq2[string, []byte]) (Outcome, error) {
	out := Outcome{DeadLetters: map[string]int{}}
	failed := map[string]bool{}
	for _, bf := range resp.BatchItemFailures {
		failed[bf.ItemIdentifier] = true
		out.Failures.Transient++
	}
	dls, err := dlq.DeadLetters()
	if err != nil {
		return out, err
	}
	for _, dl := range dls {
		failed[dl.MessageID] = true
		out.DeadLetters[string(dl.Reason)]++
		if info, _ := dl.Reason.Info(); info.Immediate {
			out.Failures.Poison++
		} else {
			out.Failures.Exhausted++
		}
	}
	digest := sha256.New()
	for id, body := range records {
		if failed[id] {
			continue
		}
		task, err := agenttask.DecodeTask(body, nil)
		if err != nil {
			return out, fmt.Errorf("record %s succeeded but its body does not decode: %w", id, err)
		}
		sum := sha256.Sum256(task.Args)
		fmt.Fprintf(digest, "%s:%s\n", id, hex.EncodeToString(sum[:]))
	}
	out.OKDigest = hex.EncodeToString(digest.Sum(nil))
	return out, nil
}
