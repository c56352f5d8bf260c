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

// Tool describes one tool of a catalog.
type Tool struct {
	Name string
	// Versions the worker supports.
	Versions []string
	// Mutates is true when the tool changes the outside world (sends an
	// email, writes a file): a failure after such a call started is
	// effect_unknown unless the ledger holds a receipt.
	Mutates bool
}

// Catalog is the set of tools a worker knows, by name.
type Catalog map[string]Tool

// SupportsVersion reports whether the tool supports version v.
func (t Tool) SupportsVersion(v string) bool {
	for _, s := range t.Versions {
		if s == v {
			return true
		}
	}
	return false
}

// SampleCatalog returns the tools of the sample worker (ARCHITECTURE.md).
func SampleCatalog() Catalog {
	c := Catalog{}
	for _, t := range []Tool{
		{Name: "web.search", Versions: []string{"1", "2"}},
		{Name: "http.fetch", Versions: []string{"1"}},
		{Name: "code.exec", Versions: []string{"1"}},
		{Name: "file.read", Versions: []string{"1"}},
		{Name: "file.write", Versions: []string{"1"}, Mutates: true},
		{Name: "sql.query", Versions: []string{"1"}},
		{Name: "vector.search", Versions: []string{"1"}},
		{Name: "email.send", Versions: []string{"1"}, Mutates: true},
	} {
		c[t.Name] = t
	}
	return c
}

// ValidationError is why a body is not a valid agent task: a poison reason and
// the field or rule that failed.
type ValidationError struct {
	Reason deadletter.Reason // json_invalid, schema_invalid, tool_unknown or tool_version_unsupported
	Field  string            // the field that failed, where one did ("args", "schema_version")
	Detail string            // what was wrong, without the field's value
}

func (e *ValidationError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s: %s: %s", e.Reason, e.Field, e.Detail)
	}
	return fmt.Sprintf("%s: %s", e.Reason, e.Detail)
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
