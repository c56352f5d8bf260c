package agenttask

import _ "embed"

// TaskSchema is the JSON Schema (draft 2020-12) of agent task v1, the
// contract that DecodeTask enforces (schema/agent-task-v1.schema.json). A
// test holds the two together: a body is valid under the schema exactly when
// DecodeTask without a catalog accepts it.
//
//go:embed schema/agent-task-v1.schema.json
var TaskSchema []byte
