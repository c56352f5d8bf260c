// Package redrivetype holds the plain data package redrive's actions
// return and its callers only read: the refusal codes (Code), the plan
// (Plan, PlanGroup, Step), the results of select, repair, verify, reject,
// pause and the move tasks, the owner's recorded decisions and the policy's
// Verdict. Their JSON is what the CLI's -o json, the console and the audit
// write. Behaviour stays in redrive; this package imports nothing of it, the
// way River keeps rivertype apart from river.
package redrivetype
