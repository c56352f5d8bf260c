package agenttask

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentdlq/agentdlq/events/deadletter"
)

// SchemaVersion is the agent task schema version this code reads.
const SchemaVersion = 1

// Task is agent task v1, the hot queue's message body. See
// schema/agent-task-v1.schema.json, which is the contract; DecodeTask
// enforces the same rules.
type Task struct {
	TaskID         string `json:"task_id"`
	RunID          string `json:"run_id"`
	Tenant         string `json:"tenant"`
	IdempotencyKey string `json:"idempotency_key"`
	Tool           string `json:"tool"`
	ToolVersion    string `json:"tool_version"`
	TraceID        string `json:"trace_id"`
	CreatedAt      string `json:"created_at"`
	SchemaVersion  int    `json:"schema_version"`
	// Args is the raw JSON object of the tool's arguments, exactly as the
	// bytes stand in the body (a sub-slice of it: do not modify).
	Args json.RawMessage `json:"args"`
}

// DeadLetterFields returns what a dead letter's dlq_meta and the worker's
// log lines say of the task (batch.Record.Describe takes it): its ids,
// tool and version, never its args.
func (t Task) DeadLetterFields() deadletter.TaskFields {
	return deadletter.TaskFields{
		TaskID: t.TaskID, RunID: t.RunID, Tenant: t.Tenant, Tool: t.Tool, ToolVersion: t.ToolVersion,
		SchemaVersion: t.SchemaVersion, IdempotencyKey: t.IdempotencyKey, TraceID: t.TraceID,
	}
}

// Tool describes one tool of a catalog.
type Tool struct {
	Name string
	// Versions is the semver range of tool_version the tool supports
	// (required): a major ("2", which is 2.x) or a constraint in the syntax
	// of github.com/Masterminds/semver/v3 (">=1.2.0 <4.0.0", "1.x || 3.x").
	// A task whose tool_version is not semver, or is outside the range, is
	// tool_version_unsupported. Check a range with ParseVersions or NewCatalog.
	Versions string
	// Mutates is true when the tool changes the outside world (sends an
	// email, writes a file): a failure after such a call started is
	// effect_unknown unless the ledger holds a receipt.
	Mutates bool
	// Verify is optional, for a mutating tool: the read-only check of
	// whether a call of it took effect, which `agentdlq ledger verify`
	// runs over the effect_unknown dead letters (see Verifier). Without
	// it, such a key's verdict is unknown: the owner checks by hand.
	Verify Verifier
}

// Catalog is the set of tools a worker knows, by name.
type Catalog map[string]Tool

// NewCatalog returns the catalog of tools, or an error naming the first tool
// without a name, named twice, whose Versions is not a semver range, or
// with a verifier (Verify) but not Mutates.
func NewCatalog(tools ...Tool) (Catalog, error) {
	c := make(Catalog, len(tools))
	for _, t := range tools {
		if t.Name == "" {
			return nil, fmt.Errorf("catalog: a tool has no name")
		}
		if _, dup := c[t.Name]; dup {
			return nil, fmt.Errorf("catalog: tool %s is declared twice", t.Name)
		}
		if err := ParseVersions(t.Versions); err != nil {
			return nil, fmt.Errorf("catalog: tool %s: %w", t.Name, err)
		}
		if t.Verify != nil && !t.Mutates {
			return nil, fmt.Errorf("catalog: tool %s has a verifier but does not mutate: only a mutating call's effect can be unknown", t.Name)
		}
		c[t.Name] = t
	}
	return c, nil
}

// SupportsVersion reports whether v is a semver version inside the tool's
// range.
func (t Tool) SupportsVersion(v string) bool {
	return rangeOf(t.Versions).check(v) == nil
}

// ValidationError is why a body is not a valid agent task: a poison reason and
// the field or rule that failed.
type ValidationError struct {
	Reason deadletter.Reason // json_invalid, schema_invalid, tool_unknown or tool_version_unsupported
	Field  string            // the field that failed, where one did ("args", "schema_version")
	Detail string            // what was wrong, without the field's value
}

// DeadLetterReason is the reason the message is dead-lettered with: the
// batch processor reads it from any error in a handler's chain that has
// this method.
func (e *ValidationError) DeadLetterReason() deadletter.Reason { return e.Reason }

// ErrorCode is the dead letter's error code: "field:" and the field that
// failed, or "" when the rule is the whole body's.
func (e *ValidationError) ErrorCode() string {
	if e.Field == "" {
		return ""
	}
	return "field:" + e.Field
}

func (e *ValidationError) Error() string {
	// Concatenated, not fmt.Sprintf'd: every poison message's dead letter
	// formats it (three allocations instead of one).
	if e.Field != "" {
		return string(e.Reason) + ": " + e.Field + ": " + e.Detail
	}
	return string(e.Reason) + ": " + e.Detail
}

// AsValidationError returns the ValidationError in err's chain, if any.
func AsValidationError(err error) (*ValidationError, bool) {
	var ve *ValidationError
	ok := errors.As(err, &ve)
	return ve, ok
}

func invalid(reason deadletter.Reason, field, detail string) *ValidationError {
	return &ValidationError{Reason: reason, Field: field, Detail: detail}
}
