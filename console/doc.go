// Package console is agentdlq's web console for the responder of a DLQ
// alarm: a thin layer of pages over the same libraries as the CLI (triage,
// redrive, ledger), served by `agentdlq ui`.
//
// # Pages
//
// Lists with counts first, one item's detail second, actions last
// (docs/console.md has each page's contents):
//
//	/            overview: every pipeline's queues, oldest dead letter,
//	             soonest deletion, owner, last triage
//	/pipeline    reason and fingerprint groups and the chart of dead letters
//	             by reason over the kept reports (triage's report.html template)
//	/group       one group: its facts, the owner's past decision, the next
//	             steps, its letters and, for effect_unknown, its keys
//	/letter      one dead letter: metadata, attempt history, countdown to
//	             deletion, ledger entry, the redacted body, reconcile
//	/redrive     a group's plan, the gated form, dry run, redrive and reject
//	/reconcile   one effect_unknown key: its ledger entry and the form
//	/verify      the tools' verifiers over the effect_unknown keys (GET:
//	             the form; POST: a proposal or apply, as a job)
//	/job         a refresh's, a redrive's or a verify's progress and result
//	/audit       every decision of a pipeline, newest first
//
// Pages render from the pipeline's latest kept triage report and the ledger;
// no page view scans a DLQ. Refresh is an explicit POST that runs triage
// (triage.Run, which keeps the report under <pipeline>/reports/) and holds
// the tagged letters in memory for the letter pages. Redrive, reject,
// reconcile and verify (a job whose Redriver.Verify reads the DLQ as
// `agentdlq ledger verify` does) run redrive.Redriver: the same gate,
// policy, canary and audit as the CLI; the past decisions and next steps
// are the Redriver's too (Redriver.Plan over the kept report: no scan, no
// audit record).
//
// # Safety
//
//   - The token: every request needs it, as ?token= on the first visit
//     (then it is set as an HttpOnly, SameSite=Strict cookie and the URL is
//     cleaned) or as that cookie. Without it: 401.
//   - Every state-changing request is a POST carrying the CSRF token (an
//     HMAC of the token) in a form field; a GET changes nothing. A POST
//     without it, or from another origin: 403.
//   - Host must be the address served (a DNS-rebinding page cannot reach it).
//   - Content-Security-Policy: default-src 'none'; style-src 'self'; no
//     script at all (progress pages refresh themselves with a meta refresh);
//     the stylesheet is embedded (go:embed), nothing is fetched from outside.
//   - html/template escapes everything. Bodies are shown through the same
//     redaction as eval exports (eval.RedactInput: secret-named keys,
//     tokens, e-mails, the pipeline's drop and hash fields); the raw body
//     is shown only after a reveal, which names who and why in the audit.
package console
