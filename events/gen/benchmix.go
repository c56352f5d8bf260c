package main

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentdlq/agentdlq/events/deadletter"
)

// The benchmark workload: batches that do not flatter the worker. The
// -large batches are all ok, all about 1,024 bytes and all of one shape, so a
// benchmark on them times the best case. A mix (go run ./events/gen -mix N
// -ok PCT -out FILE) varies what a real queue varies, from a fixed seed:
//
//   - body sizes spread evenly over 600–1,500 bytes;
//   - every tool of the catalog at every version it supports, with its own
//     nested args, plus a step history (an array of objects) and labels
//     nested two deep on some;
//   - faults inside args (args.fault first or last among the keys) on the
//     failing records, and on some ok records a "fault" outside args (a
//     top-level member of the task, or args.context.fault): not a fault by
//     the conventions, but the worker must look to know;
//   - 0 to 10 message attributes (String, Number, Binary, custom types);
//   - ApproximateReceiveCount 1 to 5;
//   - PCT % ok records (distinct idempotency keys), the rest dead-lettered
//     by the worker, spread evenly over every dead-letter reason the worker
//     gives (the four poison reasons, budget_exhausted, auth_config,
//     dependency_open, effect_unknown, policy_limit, signature_invalid,
//     guardrail_reject, unclassified from an error), and a panic at half
//     the weight of each.
//
// The failing records fail for the peer bench too (scripts/peer-bench), and
// the ok records' args survive JSON.parse and JSON.stringify byte for byte,
// so both sides print the same ok_digest on a mix.

// MixBatch renders a mix of n records, okPct of them ok, as an SQS event.
func MixBatch(n, okPct int, seed uint64) ([]byte, error) {
	if n < 1 || okPct < 0 || okPct > 100 {
		return nil, fmt.Errorf("a mix needs at least one record and an ok share of 0–100 %% (got %d, %d)", n, okPct)
	}
	data, _, err := mixBatch(n, okPct, seed).render()
	return data, err
}

// deadLetterKinds are the ways a record of a mix is dead-lettered, drawn in
// turn (the panic at half the weight: "panic" appears once, the others twice).
var deadLetterKinds = []string{
	"json_invalid", "schema_invalid", "tool_unknown", "tool_version_unsupported",
	"budget_exhausted", "auth_config", "dependency_open", "effect_unknown",
	"policy_limit", "signature_invalid", "guardrail_reject", "error",
	"json_invalid", "schema_invalid", "tool_unknown", "tool_version_unsupported",
	"budget_exhausted", "auth_config", "dependency_open", "effect_unknown",
	"policy_limit", "signature_invalid", "guardrail_reject", "error",
	"panic",
}

func mixBatch(n, okPct int, seed uint64) scenario {
	sc := fmt.Sprintf("mix-%d-ok%d", n, okPct)
	rng := rand.New(rand.NewPCG(seed, uint64(n)*1000+uint64(okPct)))
	rs := make([]rec, 0, n)
	// The ok records are spread evenly: record i is ok while the ok count
	// stays at or below okPct % of the records so far.
	ok, dead := 0, 0
	for i := 0; i < n; i++ {
		var r rec
		if (ok+1)*100 <= okPct*(i+1) {
			ok++
			r = mixOK(sc, i, rng)
		} else {
			r = mixDeadLetter(sc, i, deadLetterKinds[dead%len(deadLetterKinds)], rng)
			dead++
		}
		r.msgAttrs = mixAttrs(i, rng)
		rs = append(rs, r)
	}
	return scenario{name: sc, description: fmt.Sprintf("%d records, %d %% ok, the rest dead-lettered", n, okPct), records: rs}
}

// mixVersions are versions every tool of the sample catalog supports
// (1.x through 3.x), in the forms producers write.
var mixVersions = []string{"1", "2", "3", "1.4.2", "2.7.1", "3.0.0", "2.1"}

func mixTool(rng *rand.Rand) (string, string) {
	return tools[rng.IntN(len(tools))], mixVersions[rng.IntN(len(mixVersions))]
}

// mixTask is a valid task of tool at ver, its body padded to about size
// bytes; fault (or nil) is args.fault, first or last among the args.
func mixTask(sc string, i int, tool, ver string, fault obj, rng *rand.Rand) obj {
	t := task(sc, i, tool, ver, nil)
	args := toolArgs(tool, i+rng.IntN(1000))
	ctx := obj{{"step", rng.IntN(40)}}
	if rng.IntN(2) == 0 {
		var hist []obj
		for k := range rng.IntN(4) + 1 {
			hist = append(hist, obj{{"step", k}, {"tool", tools[rng.IntN(len(tools))]}, {"ok", rng.IntN(5) > 0}, {"ms", rng.IntN(3000)}})
		}
		ctx = ctx.set("history", hist)
	}
	if rng.IntN(3) == 0 {
		ctx = ctx.set("labels", obj{{"team", tenants[rng.IntN(len(tenants))]}, {"env", []string{"prod", "staging"}[rng.IntN(2)]},
			{"budget", obj{{"steps", 20 + rng.IntN(30)}, {"usd", float64(rng.IntN(5000)) / 100}}}})
	}
	faultFirst := fault != nil && rng.IntN(2) == 0
	if faultFirst {
		args = append(obj{{"fault", fault}}, args...)
	}
	withCtx := func(notes string) obj {
		a := args.set("context", ctx.set("notes", notes))
		if fault != nil && !faultFirst {
			a = a.set("fault", fault)
		}
		return t.set("args", a)
	}
	// The notes are written as they stand (no escapes), so each byte of
	// them is a byte of the body; the cut backs off to a rune boundary.
	size := 600 + rng.IntN(901)
	pad := size - len(body(withCtx("")))
	if pad <= 0 {
		return withCtx("")
	}
	filler := strings.Repeat(notes+" ", pad/len(notes)+1)[:pad]
	for !utf8.ValidString(filler) {
		filler = filler[:len(filler)-1]
	}
	return withCtx(strings.TrimSpace(filler))
}

// mixOK is an ok record; one in four carries a "fault" outside args.
func mixOK(sc string, i int, rng *rand.Rand) rec {
	tool, ver := mixTool(rng)
	t := mixTask(sc, i, tool, ver, nil, rng)
	receive := 1 + rng.IntN(5)
	why := "a valid task without a fault"
	switch rng.IntN(8) {
	case 0:
		t = t.set("fault", transient(503, 0))
		why = "a valid task; its \"fault\" is a member of the task, outside args: not a fault"
	case 1:
		for k := range t {
			if t[k].k != "args" {
				continue
			}
			args := t[k].v.(obj)
			for j := range args {
				if args[j].k == "context" {
					args[j].v = args[j].v.(obj).set("fault", kind("policy_limit"))
				}
			}
		}
		why = "a valid task; its \"fault\" is args.context.fault, nested: not a fault"
	}
	return rec{body: body(t), receive: receive, outcome: OutcomeOK, why: why}
}

// mixDeadLetter is a record the worker dead-letters for the given kind.
func mixDeadLetter(sc string, i int, k string, rng *rand.Rand) rec {
	tool, ver := mixTool(rng)
	receive := 1 + rng.IntN(5)
	last := MaxReceiveCount + rng.IntN(2) // a budget reason needs the last receive
	bad := func(b string, reason deadletter.Reason, why string) rec {
		r := poison(b, reason, why)
		r.receive = receive
		return r
	}
	faulty := func(tool string, fault obj, n int) rec {
		o, reason, why := outcome(tool, fault, n)
		return rec{body: body(mixTask(sc, i, tool, ver, fault, rng)), receive: n, outcome: o, reason: reason, why: why}
	}
	switch k {
	case "json_invalid":
		b := body(mixTask(sc, i, tool, ver, nil, rng))
		return bad(b[:len(b)*(1+rng.IntN(3))/4], deadletter.ReasonJSONInvalid, "a truncated body")
	case "schema_invalid":
		t := mixTask(sc, i, tool, ver, nil, rng)
		switch rng.IntN(3) {
		case 0:
			return bad(body(t.without("tenant")), deadletter.ReasonSchemaInvalid, "tenant missing")
		case 1:
			return bad(body(t.set("schema_version", 2)), deadletter.ReasonSchemaInvalid, "schema_version 2")
		default:
			return bad(body(t.set("run_id", 7)), deadletter.ReasonSchemaInvalid, "run_id is a number")
		}
	case "tool_unknown":
		return bad(body(mixTask(sc, i, tool, ver, nil, rng).set("tool", "web.crawl")), deadletter.ReasonToolUnknown, "web.crawl is not in the catalog")
	case "tool_version_unsupported":
		v := []string{"4.0.0", "0.9.1", "latest"}[rng.IntN(3)]
		return bad(body(mixTask(sc, i, tool, ver, nil, rng).set("tool_version", v)), deadletter.ReasonToolVersionUnsupported, tool+" version "+v)
	case "budget_exhausted":
		return faulty(tool, transient([]int{429, 503}[rng.IntN(2)], 0), last)
	case "auth_config":
		return faulty(tool, kind("auth", kv{"code", []string{"AccessDenied", "ExpiredToken"}[rng.IntN(2)]}), last)
	case "dependency_open":
		return faulty(tool, kind("dependency_open", kv{"dependency", "search-api"}), last)
	case "effect_unknown":
		return faulty([]string{"email.send", "file.write"}[rng.IntN(2)], kind("timeout_after_effect"), receive)
	case "error":
		return faulty(tool, kind("error", kv{"error", "parse upstream reply: unexpected token at offset " + strconv.Itoa(rng.IntN(900)) +
			" (Authorization: Bearer sk-test-0123456789abcdefABCDEF, contact ops@example.com)"}), receive)
	default: // policy_limit, signature_invalid, guardrail_reject, panic
		return faulty(tool, kind(k), receive)
	}
}

// mixAttrNames are the message attributes a record of a mix may carry, in
// the order they are added (0 to 10 of them).
var mixAttrNames = []string{"tenant", "producer", "priority", "trace", "run_id", "step", "content_type", "signature", "attempt_budget", "zz_checksum"}

func mixAttrs(i int, rng *rand.Rand) map[string]sqsAttribute {
	m := map[string]sqsAttribute{}
	for _, name := range mixAttrNames[:rng.IntN(len(mixAttrNames)+1)] {
		switch name {
		case "priority", "step":
			m[name] = strAttr("Number", strconv.Itoa(rng.IntN(10)))
		case "attempt_budget":
			m[name] = strAttr("Number.int", "4")
		case "trace":
			m[name] = strAttr("String.trace", fmt.Sprintf("Root=1-6749a3c0-%024x;Sampled=1", rng.Uint64()))
		case "signature":
			m[name] = binAttr("Binary", sha([]byte(strconv.Itoa(i)))[:16])
		case "zz_checksum":
			m[name] = binAttr("Binary.sha256", sha([]byte(strconv.Itoa(i))))
		default:
			m[name] = strAttr("String", fmt.Sprintf("%s-%d", name, rng.IntN(50)))
		}
	}
	return m
}
