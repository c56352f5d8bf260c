// Package eval exports a triage report's recurring poison and unclassified
// groups as eval cases: one JSONL record per distinct case, Braintrust-
// shaped (it converts to LangSmith, promptfoo and OpenAI Evals), redacted
// by the pipeline's eval settings (RedactInput), with a manifest per
// export, to a store.Destination: a folder or S3. A case is never exported
// twice. To is the triage.Exporter that does so for triage.Run.
package eval
