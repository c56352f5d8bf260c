package main

import (
	"fmt"
	"strings"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
)

// parseOverrides reads --override values of the form reason=justification
// into redrive.Ack.Overrides. An unknown reason or an empty justification
// is refused, naming the request field (inFlags tells it as the flag).
func parseOverrides(values []string) (map[deadletter.Reason]string, error) {
	out := make(map[deadletter.Reason]string, len(values))
	for _, s := range values {
		name, just, ok := strings.Cut(s, "=")
		if !ok || strings.TrimSpace(just) == "" {
			return nil, &redrive.Refusal{Code: redrivetype.CodeBadInput, Field: "Ack.Overrides", Reason: fmt.Sprintf("%q: want reason=justification, with a justification", s)}
		}
		r, err := deadletter.ParseReason(name)
		if err != nil {
			return nil, &redrive.Refusal{Code: redrivetype.CodeUnknownReason, Field: "Ack.Overrides", Reason: fmt.Sprintf("%q: %v", s, err)}
		}
		out[r] = strings.TrimSpace(just)
	}
	return out, nil
}

// parseReasons reads --reason values (repeated, or comma-separated), each
// once, in the order given.
func parseReasons(values []string) ([]deadletter.Reason, error) {
	var out []deadletter.Reason
	seen := map[deadletter.Reason]bool{}
	for _, v := range values {
		for _, s := range strings.Split(v, ",") {
			if strings.TrimSpace(s) == "" {
				continue
			}
			r, err := deadletter.ParseReason(s)
			if err != nil {
				return nil, &redrive.Refusal{Code: redrivetype.CodeUnknownReason, Field: "Reasons", Reason: fmt.Sprintf("%q: %v", strings.TrimSpace(s), err)}
			}
			if !seen[r] {
				seen[r] = true
				out = append(out, r)
			}
		}
	}
	return out, nil
}
