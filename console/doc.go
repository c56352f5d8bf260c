// Package console is agentdlq's web console for the responder of a DLQ
// alarm: a thin layer of pages over the same libraries as the CLI (triage,
// redrive, ledger), served by `agentdlq ui`.
//
// # Pages
//
// Lists with counts first, one item's detail second, actions last:
//
//	/            overview: every pipeline's hot-queue depth and in flight, DLQ
//	             depth, oldest dead letter, soonest deletion, owner, last triage
//	/pipeline    reason groups, then fingerprint groups, with counts, first and
//	             last seen, tenants, next action, redrivability and its
//	             condition, letters expiring within the warning window, and the
//	             chart of dead letters by reason over the kept reports (the
//	             template of triage's report.html)
//	/group       one group: its facts, the owner's past decision on it (a
//	             rejection: who, when, why; for effect_unknown, how many keys
//	             are reconciled) and the command to run next, its letters,
//	             and, for effect_unknown, its idempotency keys with their
//	             ledger state (done, effect_unknown, reconciled)
//	/letter      one dead letter: decoded metadata, attempt history as a
//	             timeline, countdown to deletion, ledger entry, body
//	             pretty-printed and redacted (revealing it is an audited
//	             POST), and the reconcile form while its key's effect is
//	             unknown
//	/redrive     the plan of a group, marked with the past decisions as
//	             `agentdlq redrive plan` marks it, the form (owner, why, rate,
//	             canary, and fix deployed / reviewed / override where the
//	             policy asks), a dry run, the redrive itself, and reject
//	/reconcile   one effect_unknown key: its ledger entry, its last
//	             reconciliation in the audit, its letters, and the form
//	             (no effect, or effect confirmed with the receipt; owner,
//	             why); the POST shows what changed in the ledger
//	/job         a refresh's or a redrive's progress: seen or moved of total,
//	             the canary's outcome, the result
//	/audit       every decision of a pipeline, newest first, by action and outcome
//
// Pages render from the pipeline's latest kept triage report and the ledger;
// no page view scans a DLQ. Refresh is an explicit POST that runs triage
// (triage.Run, which keeps the report under <pipeline>/reports/) and holds
// the tagged letters in memory for the letter pages. A console started on
// reports alone shows every list; a letter's page asks for a refresh.
// Redrive, reject and reconcile run redrive.Redriver: the same gate, policy,
// canary and audit as `agentdlq redrive select`, `reject` and `agentdlq
// ledger reconcile`. The past decisions are the Redriver's too
// (Redriver.Plan over the kept report: no scan, no audit record).
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
//     redaction as eval exports (triage.RedactInput: secret-named keys,
//     tokens, e-mails, the pipeline's drop and hash fields); the raw body
//     is shown only after a reveal, which names who and why in the audit.
package console
