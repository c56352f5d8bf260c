package triage

import (
	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/pipeline"
)

// awsTraceHeader is the SQS system attribute of the X-Ray trace header.
const awsTraceHeader = "AWSTraceHeader"

// traceOf is a case's EvalMetadata.TraceID: the redacted input's trace_id
// when the input is a task object (so drop_fields and hash_fields apply as
// they do to the input), else dlq_meta's trace id, dropped, hashed or
// redacted by the same rules.
func traceOf(t *Tagged, input any, cfg pipeline.Eval) string {
	if obj, ok := input.(map[string]any); ok {
		v, _ := obj["trace_id"].(string)
		return v
	}
	if t.Meta == nil || t.Meta.TraceID == "" {
		return ""
	}
	for _, f := range cfg.DropFields {
		if f == "trace_id" {
			return ""
		}
	}
	for _, f := range cfg.HashFields {
		if f == "trace_id" {
			return HashValue(t.Meta.TraceID)
		}
	}
	return deadletter.Redact(t.Meta.TraceID, 0)
}
