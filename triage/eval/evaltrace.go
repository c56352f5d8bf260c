package eval

import (
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/triage/dlq"
)

// awsTraceHeader is the SQS system attribute of the X-Ray trace header.
const awsTraceHeader = "AWSTraceHeader"

// traceOf is a case's EvalMetadata.TraceID: the redacted input's trace_id
// when the input is a task object (so drop_fields and hash_fields apply as
// they do to the input), else dlq_meta's trace id, dropped, hashed or
// redacted by the same rules (RedactInput's, on {"trace_id": …}).
func traceOf(t *dlq.Tagged, input any, cfg pipeline.Eval) string {
	obj, ok := input.(map[string]any)
	if !ok {
		if t.Meta == nil || t.Meta.TraceID == "" {
			return ""
		}
		obj = map[string]any{"trace_id": t.Meta.TraceID}
		dropAndHash(obj, cfg)
		redactValue(obj, "")
	}
	v, _ := obj["trace_id"].(string)
	return v
}
