package deadletter

import (
	"fmt"
	"strings"
)

// Class is a failure class: what kind of failure it was, which decides what
// the worker does with the message.
type Class string

// The failure classes, one closed set. See docs/architecture.md and docs/reasons.md.
const (
	// ClassTransient: 429, 5xx, a timeout before any effect. Retried inside the budget.
	ClassTransient Class = "transient"
	// ClassPoison: the message can never succeed as it is. Dead-lettered at once.
	ClassPoison Class = "poison"
	// ClassSecurity: a bad signature, a guardrail rejection or a reused
	// idempotency key. Dead-lettered at once.
	ClassSecurity Class = "security"
	// ClassAuthorization: an expired credential, AccessDenied, KMS denied.
	// Retried inside the budget, since a configuration fix may land.
	ClassAuthorization Class = "authorization"
	// ClassDependency: a circuit breaker is open for a dependency. Fails fast,
	// dead-lettered when the budget is spent.
	ClassDependency Class = "dependency"
	// ClassAmbiguous: a timeout or crash after a mutating tool call started.
	// Dead-lettered at once: repeating it may repeat the effect.
	ClassAmbiguous Class = "ambiguous"
	// ClassPolicy: too many steps, turns or too much cost. Dead-lettered at once.
	ClassPolicy Class = "policy"
	// ClassUnknown: an error nobody classified, or a panic. Dead-lettered at
	// once; never assumed retryable.
	ClassUnknown Class = "unknown"
	// ClassBroker: the broker moved the message after maxReceiveCount receives
	// without the worker finishing it (inferred by triage).
	ClassBroker Class = "broker"
	// ClassLedger: the ledger saw the same idempotency key dead-lettered again
	// after repeated redrives.
	ClassLedger Class = "ledger"
)

var classes = []Class{
	ClassTransient, ClassPoison, ClassSecurity, ClassAuthorization, ClassDependency,
	ClassAmbiguous, ClassPolicy, ClassUnknown, ClassBroker, ClassLedger,
}

// AllClasses lists every failure class in the order above.
func AllClasses() []Class { return append([]Class(nil), classes...) }

// Valid reports whether c is one of the known classes.
func (c Class) Valid() bool {
	for _, x := range classes {
		if x == c {
			return true
		}
	}
	return false
}

// Retryable reports whether the worker retries a failure of the class while
// the receive budget lasts (transient, authorization, dependency); a failure
// of any other class is dead-lettered at once.
func (c Class) Retryable() bool {
	return c == ClassTransient || c == ClassAuthorization || c == ClassDependency
}

// NextAction is what an operator does next with a dead letter of a reason:
// one per reason, in the words Describe returns (docs/reasons.md, triage's
// reports, redrive's plan and the console all show the same).
type NextAction string

const (
	// NextRetry means redrive it as it is.
	NextRetry NextAction = "retry"
	// NextRetryAfter means fix the credential, permission or configuration, then
	// redrive it as it is.
	NextRetryAfter NextAction = "retry_after_fix"
	// NextFixProducer means fix the producer (or the worker, where the fault is
	// its own) and deploy; then redrive. The dead letter's body is not
	// changed: a patch of its args does not repair it, or is not the first
	// thing to try (see Reason.Patchable).
	NextFixProducer NextAction = "fix_producer"
	// NextPatchAndRedrive means the task's args are at fault: patch them
	// (`agentdlq redrive repair`, the console's Repair form), which sends
	// the repaired task; fix the producer too, so no more arrive.
	NextPatchAndRedrive NextAction = "patch_and_redrive"
	// NextReject means never redrive it; record the rejection (audit).
	NextReject NextAction = "reject"
	// NextHumanReview means a person decides (reconcile first where an effect
	// may have happened).
	NextHumanReview NextAction = "human_review"
)

var nextActions = []struct {
	a    NextAction
	text string
}{
	{NextRetry, "redrive it as it is."},
	{NextRetryAfter, "fix the credential, permission or configuration, then redrive it as it is."},
	{NextFixProducer, "fix the producer (or the worker, where the fault is its own) and deploy, then redrive; the letter's body is not patched."},
	{NextPatchAndRedrive, "patch the task's args (`agentdlq redrive repair`, the console's Repair form), which sends the repaired task; fix the producer too."},
	{NextReject, "never redrive it; record the rejection (audit)."},
	{NextHumanReview, "a person decides; where an effect may have happened, reconcile it first (ledger receipt or the external system)."},
}

// AllNextActions lists every next action in the order above.
func AllNextActions() []NextAction {
	out := make([]NextAction, len(nextActions))
	for i, n := range nextActions {
		out[i] = n.a
	}
	return out
}

// Describe is the next action in the words an operator acts on ("" for an
// unknown one).
func (a NextAction) Describe() string {
	for _, n := range nextActions {
		if n.a == a {
			return n.text
		}
	}
	return ""
}

// Redrivable says whether a reason's dead letters may be redriven as they
// are (a redrive moves the body unchanged; a patch is Reason.Patchable).
type Redrivable string

// The redrive answers, from "as it is" to "never".
const (
	RedriveYes         Redrivable = "yes"
	RedriveAfterFix    Redrivable = "after_fix"     // once the fix is deployed
	RedriveAfterReview Redrivable = "after_review"  // once a person has looked
	RedriveNever       Redrivable = "no"            // never: reject or reconcile instead
	RedriveNeverBlind  Redrivable = "never_blindly" // only after reconciling the external effect
)

var redrivables = []struct {
	r    Redrivable
	text string
}{
	{RedriveYes, "may be redriven as it is."},
	{RedriveAfterFix, "may be redriven once the fix is deployed."},
	{RedriveAfterReview, "may be redriven once a person has looked at why the broker moved it."},
	{RedriveNeverBlind, "never blindly: only after the external effect is reconciled."},
	{RedriveNever, "never as it is: reject it (or compensate, or patch its args where the reason allows a patch) instead."},
}

// AllRedrivables lists every redrivability in the order above.
func AllRedrivables() []Redrivable {
	out := make([]Redrivable, len(redrivables))
	for i, r := range redrivables {
		out[i] = r.r
	}
	return out
}

// Describe says what the redrivability allows ("" for an unknown one).
func (r Redrivable) Describe() string {
	for _, x := range redrivables {
		if x.r == r {
			return x.text
		}
	}
	return ""
}

// Reason is why a message is in a DLQ: the value of the dlq_reason attribute.
type Reason string

// The reasons, one closed set. Each has one policy, written once in the
// table below (see Info): its class, its next action, whether it may be
// redriven as it is, and whether a patch of its args may repair it. Triage,
// redrive (plan, select, repair), the console and docs/reasons.md all read
// it; tests keep them in step.
const (
	// ReasonBudgetExhausted: a transient failure on the last allowed receive.
	ReasonBudgetExhausted Reason = "budget_exhausted"
	// ReasonJSONInvalid: the body is not JSON (or not a JSON object).
	ReasonJSONInvalid Reason = "json_invalid"
	// ReasonSchemaInvalid: the body is JSON but breaks the agent task v1 schema.
	ReasonSchemaInvalid Reason = "schema_invalid"
	// ReasonToolUnknown: the task names a tool that is not in the catalog.
	ReasonToolUnknown Reason = "tool_unknown"
	// ReasonToolVersionUnsupported: the tool exists, but tool_version is not semver or is outside the range the tool supports.
	ReasonToolVersionUnsupported Reason = "tool_version_unsupported"
	// ReasonSignatureInvalid: the task's signature did not verify.
	ReasonSignatureInvalid Reason = "signature_invalid"
	// ReasonGuardrailReject: a guardrail rejected the task.
	ReasonGuardrailReject Reason = "guardrail_reject"
	// ReasonIdempotencyKeyReused: the ledger knows the task's idempotency
	// key with another digest of its canonical args: a producer reused the
	// key for another task, or the args were changed after the key was
	// issued. The task never ran and its key's entry was left as it was.
	ReasonIdempotencyKeyReused Reason = "idempotency_key_reused"
	// ReasonAuthConfig: credentials or permissions failed on every allowed receive.
	ReasonAuthConfig Reason = "auth_config"
	// ReasonDependencyOpen: a dependency's circuit stayed open for the whole budget.
	ReasonDependencyOpen Reason = "dependency_open"
	// ReasonEffectUnknown: a mutating call started and its outcome is unknown.
	ReasonEffectUnknown Reason = "effect_unknown"
	// ReasonPolicyLimit: the task exceeded a step, turn or cost limit.
	ReasonPolicyLimit Reason = "policy_limit"
	// ReasonUnclassified: an error nobody classified, or a panic.
	ReasonUnclassified Reason = "unclassified"
	// ReasonReceiveLimit: inferred by triage for a dead letter without worker
	// metadata in a DLQ fed by a redrive policy: crash, Lambda timeout, OOM.
	ReasonReceiveLimit Reason = "receive_limit"
	// ReasonRedriveLoop: the same idempotency key dead-lettered again after
	// it had been redriven the configured number of times.
	ReasonRedriveLoop Reason = "redrive_loop"
)

// ReasonInfo is one row of the reason taxonomy: the policy of a reason.
type ReasonInfo struct {
	Reason Reason
	Class  Class
	// Next is what an operator does next (NextAction.Describe says it in words).
	Next NextAction
	// Redrivable says whether its dead letters may be redriven as they are.
	Redrivable Redrivable
	// Patchable is true when a patch of the task's args may repair it
	// (`agentdlq redrive repair`, the console's Repair form): the body is
	// a task the worker read, its args may be at fault, and no control
	// stands in the way. False where there are no args to patch
	// (json_invalid), where what is at fault is not in the args (a tool's
	// name or version, a credential, a dependency, a transient failure:
	// retry or fix instead), and where a patch would go around a control
	// (a signature, a guardrail, a reused key, a redrive loop).
	Patchable bool
	// Immediate is true when the worker dead-letters on the first failure,
	// false when it retries inside the budget first.
	Immediate bool
	// Inferred is true for reasons that triage infers rather than the worker writes.
	Inferred bool
	// Summary is one line for reports and docs.
	Summary string
}

// taxonomy is the policy table: one row per reason, and the only place a
// reason's next action, redrivability and patchability are written.
var taxonomy = []ReasonInfo{
	{ReasonBudgetExhausted, ClassTransient, NextRetry, RedriveYes, false, false, false, "transient failure (429, 5xx, timeout before any effect) on the last allowed receive"},
	{ReasonJSONInvalid, ClassPoison, NextFixProducer, RedriveAfterFix, false, true, false, "the body is not a JSON object"},
	{ReasonSchemaInvalid, ClassPoison, NextPatchAndRedrive, RedriveAfterFix, true, true, false, "the body breaks the agent task v1 schema"},
	{ReasonToolUnknown, ClassPoison, NextFixProducer, RedriveAfterFix, false, true, false, "the task names a tool that is not in the catalog"},
	{ReasonToolVersionUnsupported, ClassPoison, NextFixProducer, RedriveAfterFix, false, true, false, "the tool exists, but tool_version is not semver or is outside the tool's range"},
	{ReasonSignatureInvalid, ClassSecurity, NextReject, RedriveNever, false, true, false, "the task's signature did not verify"},
	{ReasonGuardrailReject, ClassSecurity, NextReject, RedriveNever, false, true, false, "a guardrail rejected the task"},
	{ReasonIdempotencyKeyReused, ClassSecurity, NextReject, RedriveNever, false, true, false, "the idempotency key is known with other args (a reused key or changed args): never run"},
	{ReasonAuthConfig, ClassAuthorization, NextRetryAfter, RedriveAfterFix, false, false, false, "expired credential, AccessDenied or KMS denied on every allowed receive"},
	{ReasonDependencyOpen, ClassDependency, NextRetry, RedriveYes, false, false, false, "a dependency's circuit breaker stayed open for the whole budget"},
	{ReasonEffectUnknown, ClassAmbiguous, NextHumanReview, RedriveNeverBlind, true, true, false, "a mutating tool call started and its outcome is unknown: reconcile first"},
	{ReasonPolicyLimit, ClassPolicy, NextPatchAndRedrive, RedriveNever, true, true, false, "too many steps, turns or too much cost"},
	{ReasonUnclassified, ClassUnknown, NextFixProducer, RedriveAfterFix, true, true, false, "an error nobody classified, or a panic"},
	{ReasonReceiveLimit, ClassBroker, NextHumanReview, RedriveAfterReview, true, false, true, "the broker moved it after maxReceiveCount receives: crash, Lambda timeout or out of memory"},
	{ReasonRedriveLoop, ClassLedger, NextReject, RedriveNever, false, true, false, "the same idempotency key dead-lettered again after repeated redrives"},
}

var byReason = func() map[Reason]ReasonInfo {
	m := make(map[Reason]ReasonInfo, len(taxonomy))
	for _, r := range taxonomy {
		m[r.Reason] = r
	}
	return m
}()

// AllReasons lists every reason in the order of the taxonomy table.
func AllReasons() []Reason {
	out := make([]Reason, len(taxonomy))
	for i, r := range taxonomy {
		out[i] = r.Reason
	}
	return out
}

// Taxonomy returns a copy of the whole table.
func Taxonomy() []ReasonInfo { return append([]ReasonInfo(nil), taxonomy...) }

// Info returns the taxonomy row of a reason; ok is false for an unknown reason.
func (r Reason) Info() (ReasonInfo, bool) {
	i, ok := byReason[r]
	return i, ok
}

// Valid reports whether r is one of the known reasons.
func (r Reason) Valid() bool { _, ok := byReason[r]; return ok }

// Class returns the reason's class ("" for an unknown reason).
func (r Reason) Class() Class { return byReason[r].Class }

// NextAction returns the reason's default next action ("" for an unknown reason).
func (r Reason) NextAction() NextAction { return byReason[r].Next }

// Redrivable returns whether the reason's dead letters may be redriven as
// they are ("" for an unknown reason).
func (r Reason) Redrivable() Redrivable { return byReason[r].Redrivable }

// Patchable reports whether a patch of the task's args may repair a dead
// letter of the reason (false for an unknown reason). See ReasonInfo.Patchable.
func (r Reason) Patchable() bool { return byReason[r].Patchable }

// ParseReason turns a string into a Reason, or fails naming the known ones.
func ParseReason(s string) (Reason, error) {
	r := Reason(strings.TrimSpace(s))
	if r.Valid() {
		return r, nil
	}
	names := make([]string, len(taxonomy))
	for i, t := range taxonomy {
		names[i] = string(t.Reason)
	}
	return "", fmt.Errorf("unknown reason %q (known: %s)", s, strings.Join(names, ", "))
}
