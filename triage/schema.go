package triage

import _ "embed"

// reportSchema is the JSON Schema (draft 2020-12) of the report's JSON form,
// report_version 1; a test validates the golden report and live reports
// against it.
//
//go:embed report.schema.json
var reportSchema []byte
