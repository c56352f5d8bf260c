// Package workload makes the agent-task workloads of the demo, the
// end-to-end tests and the load bench: bodies of every kind the worker must
// tell apart (valid, each poison reason, transient that recovers, transient
// that exhausts its budget, effect unknown, a duplicate idempotency key), each
// with the outcome the pipeline must reach for it.
//
// The task id encodes the kind (`<prefix>-<n>-<kind>`), so that an observer
// of the queues can tell what a message was meant to do without a side table.
package workload

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/pipeline"
)

// Kind is what a task is made to do.
type Kind string

// The kinds.
const (
	OK                     Kind = "ok"                       // a valid read-only task
	OKMutating             Kind = "ok_mutating"              // a valid task of a mutating tool
	Duplicate              Kind = "duplicate"                // a second message with an earlier task's idempotency key
	JSONInvalid            Kind = "json_invalid"             // a body that is not JSON
	SchemaInvalid          Kind = "schema_invalid"           // a required field missing
	ToolUnknown            Kind = "tool_unknown"             // a tool not in the catalog
	ToolVersionUnsupported Kind = "tool_version_unsupported" // a known tool at an unknown version
	SignatureInvalid       Kind = "signature_invalid"        // args.fault kind signature_invalid
	GuardrailReject        Kind = "guardrail_reject"         // args.fault kind guardrail_reject
	PolicyLimit            Kind = "policy_limit"             // args.fault kind policy_limit
	Unclassified           Kind = "unclassified"             // an error nobody classified
	Panic                  Kind = "panic"                    // the tool panics
	TransientRecovers      Kind = "transient_recovers"       // 503 on the first receive, then success
	BudgetExhausted        Kind = "budget_exhausted"         // 429 on every receive
	EffectUnknown          Kind = "effect_unknown"           // a timeout after a mutating call started
	AuthConfig             Kind = "auth_config"              // AccessDenied on every receive
	DependencyOpen         Kind = "dependency_open"          // search-api's circuit breaker open while search-api is down
)

// AllKinds lists every kind.
func AllKinds() []Kind {
	return []Kind{OK, OKMutating, Duplicate, JSONInvalid, SchemaInvalid, ToolUnknown, ToolVersionUnsupported,
		SignatureInvalid, GuardrailReject, PolicyLimit, Unclassified, Panic, TransientRecovers, BudgetExhausted,
		EffectUnknown, AuthConfig, DependencyOpen}
}

// Known reports whether k is one of this package's kinds. Tasks read from
// a workload file made elsewhere have no kind: nothing is expected of them
// beyond being accounted for.
func (k Kind) Known() bool {
	for _, known := range AllKinds() {
		if k == known {
			return true
		}
	}
	return false
}

// Expect is the outcome the pipeline must reach for a task.
type Expect struct {
	// Processed is true when the task ends acknowledged without a dead letter
	// (Reason empty).
	Processed bool
	// Reason is the dead letter's reason otherwise.
	Reason deadletter.Reason
	// Attempts is the number of handler invocations the message gets.
	Attempts int
	// Recovers is true when the failure ends with its cause (a dependency
	// back up): the task may end processed, after a redrive, instead of
	// dead-lettered with Reason.
	Recovers bool
}

// Expect is the outcome of kind k on pipeline p (maxReceiveCount decides how
// many attempts a retried failure gets).
func (k Kind) Expect(p *pipeline.Pipeline) Expect {
	switch k {
	case OK, OKMutating, Duplicate:
		return Expect{Processed: true, Attempts: 1}
	case TransientRecovers:
		return Expect{Processed: true, Attempts: 2}
	case Panic:
		return Expect{Reason: deadletter.ReasonUnclassified, Attempts: 1}
	case DependencyOpen:
		return Expect{Reason: deadletter.Reason(k), Attempts: p.MaxReceiveCount, Recovers: true}
	case BudgetExhausted, AuthConfig:
		return Expect{Reason: deadletter.Reason(k), Attempts: p.MaxReceiveCount}
	default:
		return Expect{Reason: deadletter.Reason(k), Attempts: 1}
	}
}

// Task is one message to send.
type Task struct {
	Kind   Kind
	TaskID string
	// Key is the idempotency key ("" for bodies that have none); Tenant the
	// task's tenant, which with the pipeline scopes Key in the ledger.
	Key    string
	Tenant string
	Body   string
	// Group is the FIFO message group (the run id).
	Group string
	// Line is where a task read from input was (ReadFile, Parse): its
	// 1-based line in JSON Lines, its element in a JSON array, its record
	// in an SQS event; 0 for a task made here.
	Line int
}

// KindOf reads the kind back from a body's task id (or from the raw body
// for bodies that are not JSON); ok is false for a body of another origin.
func KindOf(body string) (Kind, bool) {
	i := strings.Index(body, `"task_id":"`)
	if i < 0 {
		if strings.HasPrefix(body, "not json: ") {
			return JSONInvalid, true
		}
		return "", false
	}
	rest := body[i+len(`"task_id":"`):]
	end := strings.IndexByte(rest, '"')
	if end < 0 {
		return "", false
	}
	id := rest[:end]
	dash := strings.LastIndexByte(id, '~')
	if dash < 0 {
		return "", false
	}
	k := Kind(id[dash+1:])
	for _, known := range AllKinds() {
		if k == known {
			return k, true
		}
	}
	return "", false
}

var (
	readTools   = []string{"web.search", "http.fetch", "code.exec", "file.read", "sql.query", "vector.search"}
	tenants     = []string{"acme", "globex", "initech", "umbrella"}
	faultByKind = map[Kind]string{
		SignatureInvalid:  `{"kind":"signature_invalid"}`,
		GuardrailReject:   `{"kind":"guardrail_reject"}`,
		PolicyLimit:       `{"kind":"policy_limit"}`,
		Unclassified:      `{"kind":"error","error":"tool returned an unexpected shape"}`,
		Panic:             `{"kind":"panic"}`,
		TransientRecovers: `{"retryable":true,"status":503,"until_receive":2}`,
		BudgetExhausted:   `{"retryable":true,"status":429}`,
		EffectUnknown:     `{"kind":"timeout_after_effect"}`,
		AuthConfig:        `{"kind":"auth","code":"AccessDenied"}`,
		DependencyOpen:    `{"kind":"dependency_open","dependency":"search-api"}`,
	}
)

// Make builds task n of kind k. prefix makes ids unique across runs. A
// Duplicate reuses the idempotency key of task dupOf (which must be a valid
// kind made with the same prefix).
func Make(prefix string, n int, k Kind, dupOf int) Task {
	id := fmt.Sprintf("%s-%06d~%s", prefix, n, k)
	run := fmt.Sprintf("%s-run-%03d", prefix, n%97)
	tenant := tenants[n%len(tenants)]
	key := fmt.Sprintf("%s:%s:%s", tenant, run, id)
	tool, version := readTools[n%len(readTools)], "1"
	args := fmt.Sprintf(`{"query":"step %d of %s","max_results":%d}`, n, run, 1+n%10)
	switch k {
	case OKMutating, EffectUnknown:
		tool = "email.send"
		args = fmt.Sprintf(`{"to":["oncall@example.com"],"subject":"digest %d","body":"dead letters this week: %d"`, n, n%13)
		if k == EffectUnknown {
			args += `,"fault":` + faultByKind[k]
		}
		args += "}"
	case Duplicate:
		// The same task again (a producer's re-send): the key, tool and args
		// of task dupOf, so that the ledger's args digest matches and the
		// second delivery is a no-op, not idempotency_key_reused.
		// The same tenant too: a key is the producer's only within its
		// tenant (and pipeline), so another tenant's is another task.
		dupRun := fmt.Sprintf("%s-run-%03d", prefix, dupOf%97)
		tenant = tenants[dupOf%len(tenants)]
		key = fmt.Sprintf("%s:%s:%s", tenant, dupRun, fmt.Sprintf("%s-%06d~%s", prefix, dupOf, OK))
		tool = readTools[dupOf%len(readTools)]
		args = fmt.Sprintf(`{"query":"step %d of %s","max_results":%d}`, dupOf, dupRun, 1+dupOf%10)
	case ToolUnknown:
		tool = "shell.exec"
	case ToolVersionUnsupported:
		tool, version = "http.fetch", "9"
	default:
		if f, ok := faultByKind[k]; ok {
			args = fmt.Sprintf(`{"query":"step %d of %s","fault":%s}`, n, run, f)
		}
	}
	t := Task{Kind: k, TaskID: id, Key: key, Tenant: tenant, Group: run}
	switch k {
	case JSONInvalid:
		t.Key = ""
		t.Body = fmt.Sprintf("not json: {task %s", id)
		return t
	case SchemaInvalid:
		// No idempotency_key: the schema requires it.
		t.Key = ""
		t.Body = fmt.Sprintf(`{"task_id":%q,"run_id":%q,"tenant":%q,"tool":%q,"tool_version":%q,"trace_id":"1-%08x-%024x","created_at":"2026-11-29T12:00:00Z","schema_version":1,"args":%s}`,
			id, run, tenant, tool, version, n, n, args)
		return t
	}
	t.Body = fmt.Sprintf(`{"task_id":%q,"run_id":%q,"tenant":%q,"idempotency_key":%q,"tool":%q,"tool_version":%q,"trace_id":"1-%08x-%024x","created_at":"2026-11-29T12:00:00Z","schema_version":1,"args":%s}`,
		id, run, tenant, key, tool, version, n, n, args)
	if !json.Valid([]byte(t.Body)) {
		panic("workload: invalid body for " + string(k)) // a bug in this generator, caught by its tests
	}
	return t
}

// Demo is the demo's workload: every kind at least once, a few valid tasks
// more, one duplicate of the first valid task, and four tasks of the same
// unsupported tool version (recurring poison for the eval export).
func Demo(prefix string) []Task {
	var ts []Task
	n := 0
	add := func(k Kind, dupOf int) {
		ts = append(ts, Make(prefix, n, k, dupOf))
		n++
	}
	for range 6 {
		add(OK, 0)
	}
	add(OKMutating, 0)
	add(Duplicate, 0) // the same idempotency key as task 0
	for _, k := range AllKinds() {
		if k != OK && k != OKMutating && k != Duplicate {
			add(k, 0)
		}
	}
	// Recurring poison, one fingerprint: what the eval export picks up
	// (eval.threshold is 3 by default).
	for range 3 {
		add(ToolVersionUnsupported, 0)
	}
	// The outage: more tasks calling search-api while it is down; they
	// dead-letter, and after the fix a redrive processes them.
	for range 2 {
		add(DependencyOpen, 0)
	}
	return ts
}

// Mix is a load workload of n tasks in fixed proportions per 100:
// 70 ok, 5 ok_mutating, 3 duplicate, 2 of each of the 8 immediate poison and
// security kinds (16), 3 transient that recovers, 1 budget exhausted,
// 1 effect unknown, 1 auth_config — shuffled with seed.
func Mix(prefix string, n int, seed uint64) []Task {
	per100 := []struct {
		k Kind
		n int
	}{
		{OK, 70}, {OKMutating, 5}, {Duplicate, 3},
		{JSONInvalid, 2}, {SchemaInvalid, 2}, {ToolUnknown, 2}, {ToolVersionUnsupported, 2},
		{SignatureInvalid, 2}, {GuardrailReject, 2}, {PolicyLimit, 2}, {Unclassified, 2},
		{TransientRecovers, 3}, {BudgetExhausted, 1}, {EffectUnknown, 1}, {AuthConfig, 1},
	}
	kinds := make([]Kind, 0, n)
	for len(kinds) < n {
		for _, x := range per100 {
			for range x.n {
				if len(kinds) < n {
					kinds = append(kinds, x.k)
				}
			}
		}
	}
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	r.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	ts := make([]Task, n)
	lastOK := -1
	for i, k := range kinds {
		if k == Duplicate && lastOK < 0 {
			k = OK // nothing to duplicate yet
		}
		ts[i] = Make(prefix, i, k, lastOK)
		if k == OK {
			lastOK = i
		}
	}
	return ts
}
