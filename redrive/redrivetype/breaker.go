package redrivetype

import "github.com/agentdlq/agentdlq/breaker"

// BreakerResult is the breaker's state before and after.
type BreakerResult struct {
	Dependency string        `json:"dependency"`
	Before     breaker.State `json:"before"`
	After      breaker.State `json:"after"`
}
