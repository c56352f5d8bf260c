// Package dlq is triage's read model of one dead letter: the message as a
// scan saw it (Message), the message with its reason, fingerprint and hints
// (Tagged), and the filter that picks tagged letters by their fields
// (Filter, with what a filter left out in Filtered). Package triage scans
// and tags letters into it; redrive, the console and the CLI read it.
package dlq
