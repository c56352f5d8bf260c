package redrive

import (
	"encoding/json"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
	"slices"
)

// checkRedrivePolicies is the pure destination check: the hot queue's
// RedrivePolicy attribute must send its dead letters to dlqARN (so the hot
// queue is this DLQ's source), and the DLQ's RedriveAllowPolicy, when set,
// must allow hotARN (allowAll, or byQueue listing it; denyAll refuses).
func checkRedrivePolicies(hotARN, dlqARN, hotRedrivePolicy, dlqRedriveAllowPolicy string) error {
	if hotRedrivePolicy == "" {
		return refuse(redrivetype.CodeDestination, "the hot queue %s has no RedrivePolicy: it is not the source of DLQ %s", hotARN, dlqARN)
	}
	var rp struct {
		DeadLetterTargetArn string `json:"deadLetterTargetArn"`
	}
	if err := json.Unmarshal([]byte(hotRedrivePolicy), &rp); err != nil {
		return refuse(redrivetype.CodeDestination, "the hot queue's RedrivePolicy is not JSON: %v", err)
	}
	if rp.DeadLetterTargetArn != dlqARN {
		return refuse(redrivetype.CodeDestination, "the hot queue %s dead-letters to %s, not to %s: it is not this DLQ's source", hotARN, rp.DeadLetterTargetArn, dlqARN)
	}
	if dlqRedriveAllowPolicy == "" {
		return nil
	}
	var ap struct {
		RedrivePermission string   `json:"redrivePermission"`
		SourceQueueArns   []string `json:"sourceQueueArns"`
	}
	if err := json.Unmarshal([]byte(dlqRedriveAllowPolicy), &ap); err != nil {
		return refuse(redrivetype.CodeDestination, "the DLQ's RedriveAllowPolicy is not JSON: %v", err)
	}
	switch ap.RedrivePermission {
	case "allowAll", "":
		return nil
	case "byQueue":
		if slices.Contains(ap.SourceQueueArns, hotARN) {
			return nil
		}
		return refuse(redrivetype.CodeDestination, "the DLQ's RedriveAllowPolicy does not list %s as a source", hotARN)
	default: // denyAll
		return refuse(redrivetype.CodeDestination, "the DLQ's RedriveAllowPolicy is %q", ap.RedrivePermission)
	}
}
