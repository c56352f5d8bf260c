// Command gen writes agentdlq's sample events and the documents derived from
// the contracts, deterministically (fixed ids, timestamps and texts):
//
//   - events/testdata/sqs-<scenario>.json: Lambda SQS events, one file a
//     scenario (valid, every poison reason, transient, exhausted, effect
//     unknown, FIFO groups, ten attributes, malformed events, ...);
//   - events/testdata/expected.json: the outcome of every record under
//     maxReceiveCount 4 (ok, retry, or dead_letter with the reason), taken
//     from the same table that made the records;
//   - docs/reasons.md: the reason taxonomy, from deadletter.Taxonomy().
//
// Run it from the repository root:
//
//	go run ./events/gen           # rewrite every file
//	go run ./events/gen -check    # exit 1 when a file is out of date
//	go run ./events/gen -docs     # rewrite docs/reasons.md only
//	go run ./events/gen -mix 1000 -ok 90 -out FILE   # a benchmark mix (benchmix.go)
//
// The tests of this package fail when a committed file differs from what
// the generator makes (go test ./events/gen -update rewrites them).
package main

import (
	"bytes"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agentdlq/agentdlq/events/agenttask"
	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/functions/sampleworker"
)

func main() {
	root := flag.String("root", ".", "the repository root")
	check := flag.Bool("check", false, "only check that the files are up to date")
	docsOnly := flag.Bool("docs", false, "only docs/reasons.md")
	large := flag.Int("large", 0, "write a batch of this many valid ~1 KB tasks (distinct keys; the first 100 are sqs-large-batch's) to -out, and nothing else")
	mix := flag.Int("mix", 0, "write a benchmark mix of this many records to -out, and nothing else: sizes 600–1,500 B, every tool and shape, 0–10 attributes, receive counts 1–5, -ok % ok and the rest dead-lettered for every reason (benchmix.go)")
	okPct := flag.Int("ok", 90, "the share of ok records in a -mix, in percent")
	seed := flag.Uint64("seed", 1, "the seed of a -mix")
	out := flag.String("out", "", "the file -large or -mix writes")
	flag.Parse()

	if *mix > 0 {
		if *out == "" {
			fmt.Fprintln(os.Stderr, "gen: -mix needs -out FILE")
			os.Exit(2)
		}
		data, err := MixBatch(*mix, *okPct, *seed)
		if err == nil {
			err = os.WriteFile(*out, data, 0o644)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "gen:", err)
			os.Exit(1)
		}
		fmt.Println("wrote", *out)
		return
	}
	if *large > 0 {
		if *out == "" {
			fmt.Fprintln(os.Stderr, "gen: -large needs -out FILE")
			os.Exit(2)
		}
		data, err := LargeBatch(*large)
		if err == nil {
			err = os.WriteFile(*out, data, 0o644)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "gen:", err)
			os.Exit(1)
		}
		fmt.Println("wrote", *out)
		return
	}

	files, err := Generate()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	stale := 0
	for _, f := range files {
		if *docsOnly && f.Path != ReasonsDoc {
			continue
		}
		path := filepath.Join(*root, f.Path)
		old, _ := os.ReadFile(path)
		if bytes.Equal(old, f.Data) {
			continue
		}
		if *check {
			fmt.Fprintf(os.Stderr, "gen: %s is out of date (run go run ./events/gen)\n", f.Path)
			stale++
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "gen:", err)
			os.Exit(1)
		}
		if err := os.WriteFile(path, f.Data, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "gen:", err)
			os.Exit(1)
		}
		fmt.Println("wrote", f.Path)
	}
	if stale > 0 {
		os.Exit(1)
	}
}

// Paths the generator writes, relative to the repository root.
const (
	TestdataDir  = "events/testdata"
	ExpectedFile = TestdataDir + "/expected.json"
	ReasonsDoc   = "docs/reasons.md"
)

// MaxReceiveCount is the redrive policy the expected outcomes assume (the
// agent-tasks pipeline's).
const MaxReceiveCount = 4

// File is one generated file.
type File struct {
	Path string
	Data []byte
}

// Generate returns every file the generator owns, in a stable order.
func Generate() ([]File, error) {
	var files []File
	exp := Expected{MaxReceiveCount: MaxReceiveCount, Conventions: "events/doc.go"}
	for _, sc := range scenarios() {
		data, fx, err := sc.render()
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %w", sc.name, err)
		}
		files = append(files, File{Path: TestdataDir + "/" + fx.File, Data: data})
		exp.Fixtures = append(exp.Fixtures, fx)
	}
	data, err := marshalIndent(exp)
	if err != nil {
		return nil, err
	}
	files = append(files, File{Path: ExpectedFile, Data: data})
	files = append(files, File{Path: ReasonsDoc, Data: ReasonsMarkdown()})
	return files, nil
}

// Expected is expected.json: what a correct worker does with every record
// of every fixture.
type Expected struct {
	MaxReceiveCount int `json:"max_receive_count"`
	// Conventions names where the args.fault conventions are written.
	Conventions string            `json:"conventions"`
	Fixtures    []ExpectedFixture `json:"fixtures"`
}

// ExpectedFixture is one fixture file's expectation.
type ExpectedFixture struct {
	File        string `json:"file"`
	Scenario    string `json:"scenario"`
	Description string `json:"description"`
	FIFO        bool   `json:"fifo"`
	// EventError is true when the file is not a Lambda SQS event: the
	// handler must refuse it with an error and acknowledge nothing.
	EventError bool             `json:"event_error"`
	Records    []ExpectedRecord `json:"records"`
}

// Outcomes of a record.
const (
	OutcomeOK         = "ok"          // acknowledged (done, or a no-op for a key already done)
	OutcomeRetry      = "retry"       // reported as a batch item failure
	OutcomeDeadLetter = "dead_letter" // sent to the DLQ by the worker with Reason, then acknowledged
)

// ExpectedRecord is one record's expected outcome.
type ExpectedRecord struct {
	MessageID string            `json:"message_id"`
	Outcome   string            `json:"outcome"`
	Reason    deadletter.Reason `json:"reason,omitempty"`
	// Why says in words why this is the outcome.
	Why string `json:"why"`
}

// ---------------------------------------------------------------------------
// The Lambda SQS event shape, written as Lambda writes it (aws-lambda-go's
// aws-lambda-go's events.SQSEvent reads it).

type sqsEvent struct {
	Records []sqsRecord `json:"Records"`
}

type sqsRecord struct {
	MessageID              string                  `json:"messageId"`
	ReceiptHandle          string                  `json:"receiptHandle"`
	Body                   string                  `json:"body"`
	Attributes             map[string]string       `json:"attributes,omitempty"`
	MessageAttributes      map[string]sqsAttribute `json:"messageAttributes"`
	MD5OfBody              string                  `json:"md5OfBody"`
	MD5OfMessageAttributes *string                 `json:"md5OfMessageAttributes"`
	EventSource            string                  `json:"eventSource"`
	EventSourceARN         string                  `json:"eventSourceARN"`
	AWSRegion              string                  `json:"awsRegion"`
}

type sqsAttribute struct {
	StringValue      *string  `json:"stringValue,omitempty"`
	BinaryValue      []byte   `json:"binaryValue,omitempty"`
	StringListValues []string `json:"stringListValues"`
	BinaryListValues [][]byte `json:"binaryListValues"`
	DataType         string   `json:"dataType"`
}

const (
	region      = "us-east-1"
	account     = "123456789012"
	stdQueueARN = "arn:aws:sqs:" + region + ":" + account + ":agent-tasks"
	fifoARN     = "arn:aws:sqs:" + region + ":" + account + ":agent-steps.fifo"
	senderID    = "AROAEXAMPLEAGENTRUNR:agent-runner"
)

// epoch is the fixed clock of every fixture.
var epoch = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// ---------------------------------------------------------------------------
// Records and scenarios.

// rec is one record of a scenario, with its expected outcome.
type rec struct {
	body    string
	receive int // ApproximateReceiveCount
	// receiveRaw overrides the ApproximateReceiveCount text ("" keeps receive).
	receiveRaw string
	// noAttributes drops the record's attributes object; emptyAttributes
	// writes it empty.
	noAttributes, emptyAttributes bool
	msgAttrs                      map[string]sqsAttribute
	group                         string // FIFO message group
	outcome                       string
	reason                        deadletter.Reason
	why                           string
	// poison is the reason DecodeTask must give the body ("" for a valid task).
	poison deadletter.Reason
}

type scenario struct {
	name, description string
	fifo              bool
	records           []rec
	raw               string // a file that is not an SQS event
}

func (sc scenario) render() ([]byte, ExpectedFixture, error) {
	fx := ExpectedFixture{
		File:        "sqs-" + sc.name + ".json",
		Scenario:    sc.name,
		Description: sc.description,
		FIFO:        sc.fifo,
		Records:     []ExpectedRecord{},
	}
	if sc.raw != "" {
		fx.EventError = true
		var buf bytes.Buffer
		if err := json.Indent(&buf, []byte(sc.raw), "", "  "); err != nil {
			return nil, fx, err
		}
		buf.WriteByte('\n')
		return buf.Bytes(), fx, nil
	}
	ev := sqsEvent{Records: []sqsRecord{}}
	for i, r := range sc.records {
		// The generator's own check: the poison it declares is what the
		// contract's decoder says.
		_, err := agenttask.DecodeTask([]byte(r.body), sampleworker.Catalog(nil))
		ve, _ := agenttask.AsValidationError(err)
		switch {
		case r.poison == "" && err != nil:
			return nil, fx, fmt.Errorf("record %d: want a valid task, DecodeTask: %v", i, err)
		case r.poison != "" && (ve == nil || ve.Reason != r.poison):
			return nil, fx, fmt.Errorf("record %d: want %s, DecodeTask: %v", i, r.poison, err)
		}
		id := uuid(sc.name, i)
		sent := epoch.Add(time.Duration(len(sc.name))*time.Hour + time.Duration(i)*time.Second)
		sr := sqsRecord{
			MessageID:         id,
			ReceiptHandle:     receiptHandle(sc.name, i),
			Body:              r.body,
			MessageAttributes: map[string]sqsAttribute{},
			MD5OfBody:         md5hex([]byte(r.body)),
			EventSource:       "aws:sqs",
			EventSourceARN:    stdQueueARN,
			AWSRegion:         region,
		}
		if sc.fifo {
			sr.EventSourceARN = fifoARN
		}
		if !r.noAttributes {
			count := strconv.Itoa(r.receive)
			if r.receiveRaw != "" || r.receive == 0 {
				count = r.receiveRaw
			}
			sr.Attributes = map[string]string{}
			if !r.emptyAttributes {
				sr.Attributes = map[string]string{
					"ApproximateReceiveCount":          count,
					"SentTimestamp":                    ms(sent),
					"SenderId":                         senderID,
					"ApproximateFirstReceiveTimestamp": ms(sent.Add(150 * time.Millisecond)),
				}
				if sc.fifo {
					sr.Attributes["MessageGroupId"] = r.group
					sr.Attributes["MessageDeduplicationId"] = hex.EncodeToString(sha([]byte(r.body)))[:32]
					sr.Attributes["SequenceNumber"] = strconv.FormatUint(18440000000000000000+uint64(i)*65536, 10)
				}
			}
		}
		if r.msgAttrs != nil {
			sr.MessageAttributes = r.msgAttrs
		}
		if len(sr.MessageAttributes) > 0 {
			sum := md5OfAttributes(sr.MessageAttributes)
			sr.MD5OfMessageAttributes = &sum
		}
		ev.Records = append(ev.Records, sr)
		fx.Records = append(fx.Records, ExpectedRecord{MessageID: id, Outcome: r.outcome, Reason: r.reason, Why: r.why})
	}
	data, err := marshalIndent(ev)
	return data, fx, err
}

// ---------------------------------------------------------------------------
// Task bodies.

// obj is a JSON object that keeps its keys in order.
type obj []kv

type kv struct {
	k string
	v any
}

func (o obj) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, p := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(p.k)
		b.Write(k)
		b.WriteByte(':')
		v, err := marshal(p.v)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// set returns o with key k set to v (replaced in place, or appended).
func (o obj) set(k string, v any) obj {
	out := append(obj(nil), o...)
	for i := range out {
		if out[i].k == k {
			out[i].v = v
			return out
		}
	}
	return append(out, kv{k, v})
}

// without returns o without key k.
func (o obj) without(k string) obj {
	var out obj
	for _, p := range o {
		if p.k != k {
			out = append(out, p)
		}
	}
	return out
}

func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

func marshalIndent(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

var tenants = []string{"acme-corp", "globex", "initech", "umbrella-labs"}

// notes is the filler prose that brings a task to about 1 KB: what an agent
// framework puts beside the arguments.
const notes = "The agent is comparing at-least-once delivery, visibility timeouts, partial batch responses and poison message handling across queue services. " +
	"Keep results technical and cite primary sources; prefer pages that explain maxReceiveCount, redrive policies and message retention. " +
	"Résumé of earlier steps: naïve retries amplified an outage — “retry storms” — so the plan now separates transient from permanent failures. " +
	"Constraints: stay within the step budget, never repeat a side effect, and report the evidence for every claim."

// task returns a ~1 KB agent task body of scenario sc, number n, for tool
// at version ver with the tool's sample arguments and the given fault.
func task(sc string, n int, tool, ver string, fault obj) obj {
	tenant := tenants[(len(sc)+n)%len(tenants)]
	run := fmt.Sprintf("run-%s-%02d", sc, n/3)
	id := fmt.Sprintf("task-%s-%03d", sc, n)
	t := obj{
		{"task_id", id},
		{"run_id", run},
		{"tenant", tenant},
		{"idempotency_key", tenant + ":" + run + ":" + id},
		{"tool", tool},
		{"tool_version", ver},
		{"trace_id", fmt.Sprintf("1-%08x-%s", epoch.Unix(), hex.EncodeToString(sha([]byte(id)))[:24])},
		{"created_at", epoch.Add(time.Duration(n) * time.Second).Format(time.RFC3339Nano)},
		{"schema_version", 1},
	}
	args := toolArgs(tool, n)
	if fault != nil {
		args = args.set("fault", fault)
	}
	// Pad to about 1 KB with the context notes.
	body, _ := marshal(t.set("args", args))
	if pad := 1024 - len(body) - len(`,"context":{"step":0,"notes":""}`); pad > 0 {
		r := []rune(notes)
		if pad < len(r) {
			r = r[:pad]
		}
		args = args.set("context", obj{{"step", n % 12}, {"notes", strings.TrimSpace(string(r))}})
	}
	return t.set("args", args)
}

func toolArgs(tool string, n int) obj {
	switch tool {
	case "web.search":
		return obj{{"query", "dead-letter queue triage for agent tool calls"}, {"locale", "en-US"}, {"max_results", 10}, {"safe_search", true},
			{"filters", obj{{"site", []string{"docs.aws.amazon.com", "go.dev"}}, {"published_after", "2024-01-01"}}}}
	case "http.fetch":
		return obj{{"url", fmt.Sprintf("https://example.com/reports/%d?format=json&lang=en", n)}, {"method", "GET"},
			{"headers", obj{{"accept", "application/json"}, {"user-agent", "agentdlq-sample/1.0"}}}, {"timeout_ms", 5000}, {"follow_redirects", true}}
	case "code.exec":
		return obj{{"language", "python"}, {"source", "import statistics\nxs = [3, 1, 4, 1, 5, 9, 2, 6]\nprint(\"mean\", statistics.mean(xs))\n"}, {"timeout_s", 10}, {"memory_mb", 256}}
	case "file.read":
		return obj{{"path", fmt.Sprintf("/workspace/reports/q%d.md", n%4+1)}, {"offset", 0}, {"length", 4096}, {"encoding", "utf-8"}}
	case "file.write":
		return obj{{"path", fmt.Sprintf("/workspace/out/summary-%03d.md", n)}, {"content", "# Summary\n\n* 3 transient failures retried\n* 1 poison task dead-lettered\n"}, {"mode", "overwrite"}}
	case "sql.query":
		return obj{{"database", "analytics"}, {"query", "SELECT tenant, count(*) AS n FROM tasks WHERE created_at >= $1 GROUP BY tenant ORDER BY n DESC LIMIT 20"},
			{"params", []string{"2026-11-01"}}, {"read_only", true}}
	case "vector.search":
		return obj{{"index", "runbooks"}, {"embedding_model", "text-embed-v3"}, {"vector", []float64{0.0123, -0.4561, 0.7890, 0.1111, -0.2222, 0.3333, 0.0444, -0.5555}}, {"top_k", 5}, {"min_score", 0.72}}
	case "email.send":
		return obj{{"to", []string{"oncall@example.com"}}, {"subject", fmt.Sprintf("Weekly DLQ digest #%d", n)}, {"body", "Dead letters this week: 12 (schema_invalid 7, budget_exhausted 5). No redrive pending."}, {"priority", "normal"}}
	}
	return obj{{"input", "x"}}
}

var tools = []string{"web.search", "http.fetch", "code.exec", "file.read", "file.write", "sql.query", "vector.search", "email.send"}

func version(tool string) string {
	if tool == "web.search" {
		return "2"
	}
	return "1"
}

func body(o obj) string {
	b, err := marshal(o)
	if err != nil {
		panic(err) // the generator's own data; a bug here is a bug in gen
	}
	return string(b)
}

// Faults: the args.fault conventions of events/doc.go.
func transient(status int, until int) obj {
	f := obj{{"retryable", true}, {"status", status}, {"error", fmt.Sprintf("upstream returned %d %s", status, statusText(status))}}
	if until > 0 {
		f = f.set("until_receive", until)
	}
	return f
}

func statusText(status int) string {
	if status == 429 {
		return "Too Many Requests"
	}
	return "Service Unavailable"
}

func kind(k string, more ...kv) obj { return append(obj{{"kind", k}}, more...) }

// outcome applies the fault conventions: what a correct worker does with a
// valid task of tool carrying fault at receive count n, under MaxReceiveCount.
func outcome(tool string, fault obj, n int) (string, deadletter.Reason, string) {
	last := n >= MaxReceiveCount
	budget := func(reason deadletter.Reason, what string) (string, deadletter.Reason, string) {
		if last {
			return OutcomeDeadLetter, reason, fmt.Sprintf("%s on receive %d = maxReceiveCount: the budget is spent", what, n)
		}
		return OutcomeRetry, "", fmt.Sprintf("%s on receive %d < maxReceiveCount: retried inside the budget", what, n)
	}
	if fault == nil {
		return OutcomeOK, "", "a valid task without a fault"
	}
	get := func(k string) any {
		for _, p := range fault {
			if p.k == k {
				return p.v
			}
		}
		return nil
	}
	if get("retryable") == true {
		if u, ok := get("until_receive").(int); ok && n >= u {
			return OutcomeOK, "", fmt.Sprintf("transient until receive %d; this is receive %d, so it succeeds", u, n)
		}
		return budget(deadletter.ReasonBudgetExhausted, fmt.Sprintf("transient %v", get("status")))
	}
	switch get("kind") {
	case "timeout_after_effect":
		if sampleworker.Catalog(nil)[tool].Mutates {
			return OutcomeDeadLetter, deadletter.ReasonEffectUnknown, tool + " mutates and timed out after the call started: dead-lettered at once"
		}
		return budget(deadletter.ReasonBudgetExhausted, tool+" is read-only, so a timeout is transient")
	case "auth":
		return budget(deadletter.ReasonAuthConfig, fmt.Sprintf("auth failure %v", get("code")))
	case "dependency_open":
		return budget(deadletter.ReasonDependencyOpen, fmt.Sprintf("circuit open for %v", get("dependency")))
	case "policy_limit":
		return OutcomeDeadLetter, deadletter.ReasonPolicyLimit, "policy limit: dead-lettered at once"
	case "signature_invalid":
		return OutcomeDeadLetter, deadletter.ReasonSignatureInvalid, "bad signature: dead-lettered at once"
	case "guardrail_reject":
		return OutcomeDeadLetter, deadletter.ReasonGuardrailReject, "guardrail rejection: dead-lettered at once"
	case "panic":
		return OutcomeDeadLetter, deadletter.ReasonUnclassified, "the tool panicked: unclassified, dead-lettered at once"
	case "error":
		return OutcomeDeadLetter, deadletter.ReasonUnclassified, "an error nobody classified: dead-lettered at once"
	}
	panic(fmt.Sprintf("gen: fault %v has no convention", fault))
}

// valid is a record of a valid task with fault at receive n.
func valid(sc string, i int, tool string, fault obj, n int) rec {
	o, r, why := outcome(tool, fault, n)
	return rec{body: body(task(sc, i, tool, version(tool), fault)), receive: n, outcome: o, reason: r, why: why}
}

// poison is a record whose body DecodeTask refuses with reason.
func poison(b string, reason deadletter.Reason, why string) rec {
	return rec{body: b, receive: 1, outcome: OutcomeDeadLetter, reason: reason, poison: reason, why: why + ": poison, dead-lettered at once"}
}

func str(s string) *string { return &s }

func strAttr(typ, v string) sqsAttribute {
	return sqsAttribute{StringValue: str(v), StringListValues: []string{}, BinaryListValues: [][]byte{}, DataType: typ}
}

func binAttr(typ string, v []byte) sqsAttribute {
	return sqsAttribute{BinaryValue: v, StringListValues: []string{}, BinaryListValues: [][]byte{}, DataType: typ}
}

// defaultAttrs are the message attributes a producer sets on a task.
func defaultAttrs(tenant string) map[string]sqsAttribute {
	return map[string]sqsAttribute{
		"tenant":   strAttr("String", tenant),
		"producer": strAttr("String", "agent-runner"),
	}
}

// tenAttrs are ten message attributes, the SQS maximum: a dead letter of
// such a message must fold two of them into dlq_meta.
func tenAttrs() map[string]sqsAttribute {
	return map[string]sqsAttribute{
		"tenant":         strAttr("String", "acme-corp"),
		"producer":       strAttr("String", "agent-runner"),
		"priority":       strAttr("Number", "5"),
		"attempt_budget": strAttr("Number.int", "4"),
		"trace":          strAttr("String.trace", "Root=1-6749a3c0-5d1e8f2b9c4a7e6d3f0b1a2c;Sampled=1"),
		"run_id":         strAttr("String", "run-attributes-10-00"),
		"step":           strAttr("Number", "3"),
		"content_type":   strAttr("String", "application/json"),
		"signature":      binAttr("Binary", []byte{0x00, 0x01, 0xfe, 0xff, 0x7f, 0x80, 'a', 'b'}),
		"zz_checksum":    binAttr("Binary.sha256", sha([]byte("attributes-10"))),
	}
}

// withAttrs sets message attributes on records that have none.
func withAttrs(sc string, rs []rec) []rec {
	for i := range rs {
		if rs[i].msgAttrs == nil {
			rs[i].msgAttrs = defaultAttrs(tenants[(len(sc)+i)%len(tenants)])
		}
	}
	return rs
}

// scenarios is the table of the sample events, one entry per scenario in
// the order of events/testdata: a data table, kept whole so that a reader
// sees every scenario and what it expects in one place (it is longer than
// a function should be; each entry is a few lines of data).
func scenarios() []scenario {
	base := func(sc string, n int) obj { return task(sc, n, "web.search", "2", nil) }
	var scs []scenario
	add := func(s scenario) {
		if s.raw == "" {
			s.records = withAttrs(s.name, s.records)
		}
		scs = append(scs, s)
	}

	// valid: one task per tool, ~1 KB each.
	var rs []rec
	for i, tool := range tools {
		rs = append(rs, valid("valid", i, tool, nil, 1))
	}
	add(scenario{name: "valid", description: "one valid ~1 KB task per tool of the sample catalog", records: rs})

	sc := "poison-json"
	full := body(base(sc, 0))
	add(scenario{name: sc, description: "bodies that are not a JSON object", records: []rec{
		poison(full[:len(full)/2], deadletter.ReasonJSONInvalid, "a truncated body"),
		poison("task: summarise the incident report", deadletter.ReasonJSONInvalid, "plain text"),
		poison(`[`+full+`]`, deadletter.ReasonJSONInvalid, "an array, not an object"),
		poison(strings.Replace(full, `"max_results":10`, `"max_results":10,}`, 1), deadletter.ReasonJSONInvalid, "invalid JSON inside args"),
		poison(full+"\n{}", deadletter.ReasonJSONInvalid, "two JSON values"),
	}})

	sc = "poison-schema"
	add(scenario{name: sc, description: "JSON objects that break the agent task v1 schema", records: []rec{
		poison(body(base(sc, 0).without("trace_id")), deadletter.ReasonSchemaInvalid, "trace_id missing"),
		poison(body(base(sc, 1).set("tenant", 42)), deadletter.ReasonSchemaInvalid, "tenant is a number"),
		poison(body(base(sc, 2).set("schema_version", 2)), deadletter.ReasonSchemaInvalid, "schema_version 2"),
		poison(body(base(sc, 3).set("args", []string{"dead-letter queue triage"})), deadletter.ReasonSchemaInvalid, "args is an array, not an object"),
		poison(body(base(sc, 4).set("task_id", "")), deadletter.ReasonSchemaInvalid, "task_id is empty"),
		poison(body(base(sc, 5).set("schema_version", "1")), deadletter.ReasonSchemaInvalid, "schema_version is a string"),
	}})

	sc = "poison-tool-unknown"
	add(scenario{name: sc, description: "tasks naming a tool that is not in the catalog", records: []rec{
		poison(body(base(sc, 0).set("tool", "web.crawl")), deadletter.ReasonToolUnknown, "web.crawl is not in the catalog"),
		poison(body(base(sc, 1).set("tool", "shell.exec").set("tool_version", "1")), deadletter.ReasonToolUnknown, "shell.exec is not in the catalog"),
	}})

	sc = "poison-tool-version"
	add(scenario{name: sc, description: "known tools at a version the worker does not support", records: []rec{
		poison(body(base(sc, 0).set("tool_version", "4.0.0")), deadletter.ReasonToolVersionUnsupported, "web.search supports >=1.0.0 <4.0.0, not 4.0.0"),
		poison(body(task(sc, 1, "email.send", "latest", nil)), deadletter.ReasonToolVersionUnsupported, "latest is not a semver version"),
		poison(body(task(sc, 2, "http.fetch", "0.9.1", nil)), deadletter.ReasonToolVersionUnsupported, "http.fetch supports >=1.0.0 <4.0.0, not 0.9.1"),
	}})

	sc = "tool-version-semver"
	semverTask := func(i int, tool, ver string) rec {
		o, r, why := outcome(tool, nil, 1)
		return rec{body: body(task(sc, i, tool, ver, nil)), receive: 1, outcome: o, reason: r, why: why + " (" + ver + " is inside >=1.0.0 <4.0.0)"}
	}
	add(scenario{name: sc, description: "tasks at minor and patch releases inside the tools' range (1.x through 3.x): processed, not dead-lettered", records: []rec{
		semverTask(0, "web.search", "2.7.1"),
		semverTask(1, "http.fetch", "1.4.2"),
		semverTask(2, "sql.query", "3.0.0"),
		semverTask(3, "file.read", "1.0.0+build.7"),
	}})

	sc = "transient"
	add(scenario{name: sc, description: "transient failures on the first receive: retried (batch item failures)", records: []rec{
		valid(sc, 0, "web.search", transient(503, 0), 1),
		valid(sc, 1, "http.fetch", transient(429, 0), 1),
		valid(sc, 2, "sql.query", transient(503, 2), 1),
		valid(sc, 3, "web.search", kind("timeout_after_effect"), 1),
		valid(sc, 4, "file.read", nil, 1),
	}})

	sc = "transient-recovers"
	add(scenario{name: sc, description: "transient faults that stop before this receive: the task succeeds", records: []rec{
		valid(sc, 0, "web.search", transient(503, 2), 2),
		valid(sc, 1, "vector.search", transient(429, 3), 3),
	}})

	sc = "exhausted"
	add(scenario{name: sc, description: "transient failures on receive maxReceiveCount (4) or later: dead-lettered as budget_exhausted", records: []rec{
		valid(sc, 0, "web.search", transient(503, 0), 4),
		valid(sc, 1, "http.fetch", transient(429, 0), 4),
		valid(sc, 2, "sql.query", transient(503, 5), 4),
		valid(sc, 3, "code.exec", transient(503, 0), 5),
	}})

	sc = "effect-unknown"
	add(scenario{name: sc, description: "timeouts after a mutating call started: effect_unknown, dead-lettered at once", records: []rec{
		valid(sc, 0, "email.send", kind("timeout_after_effect"), 1),
		valid(sc, 1, "file.write", kind("timeout_after_effect"), 1),
	}})

	sc = "auth"
	add(scenario{name: sc, description: "authorization failures: retried inside the budget, auth_config on the last receive", records: []rec{
		valid(sc, 0, "sql.query", kind("auth", kv{"code", "AccessDenied"}), 1),
		valid(sc, 1, "file.read", kind("auth", kv{"code", "ExpiredToken"}), 2),
		valid(sc, 2, "sql.query", kind("auth", kv{"code", "AccessDenied"}), 4),
	}})

	sc = "dependency-open"
	add(scenario{name: sc, description: "a dependency's circuit breaker is open: retried inside the budget, dependency_open on the last receive", records: []rec{
		valid(sc, 0, "web.search", kind("dependency_open", kv{"dependency", "search-api"}), 1),
		valid(sc, 1, "web.search", kind("dependency_open", kv{"dependency", "search-api"}), 4),
	}})

	sc = "policy-limit"
	add(scenario{name: sc, description: "a task over its step, turn or cost limit: policy_limit, dead-lettered at once", records: []rec{
		valid(sc, 0, "code.exec", kind("policy_limit"), 1),
	}})

	sc = "signature-invalid"
	add(scenario{name: sc, description: "a task whose signature does not verify: signature_invalid, dead-lettered at once", records: []rec{
		valid(sc, 0, "http.fetch", kind("signature_invalid"), 1),
	}})

	sc = "guardrail-reject"
	add(scenario{name: sc, description: "a task a guardrail rejects: guardrail_reject, dead-lettered at once", records: []rec{
		valid(sc, 0, "email.send", kind("guardrail_reject"), 1),
	}})

	sc = "panic"
	add(scenario{name: sc, description: "a tool that panics and one that fails with an error nobody classified: unclassified, dead-lettered at once", records: []rec{
		valid(sc, 0, "code.exec", kind("panic"), 1),
		valid(sc, 1, "http.fetch", kind("error", kv{"error", "parse upstream reply: unexpected token at offset 17 (Authorization: Bearer sk-test-0123456789abcdefABCDEF, contact ops@example.com)"}), 1),
	}})

	// FIFO: two message groups interleaved; group A fails transiently in the
	// middle (the rest of A is reported, not processed); group B holds a
	// poison task, which the FIFO pipelines dead-letter and go on
	// (fifo_poison "dead_letter").
	sc = "fifo-group"
	groups := []string{"run-fifo-A", "run-fifo-B", "run-fifo-A", "run-fifo-B", "run-fifo-A", "run-fifo-B"}
	// One message group per agent run: the group is the task's run_id.
	inGroup := func(i int, tool string, fault obj) rec {
		o, r, why := outcome(tool, fault, 1)
		return rec{body: body(task(sc, i, tool, version(tool), fault).set("run_id", groups[i])), receive: 1, outcome: o, reason: r, why: why}
	}
	fifo := []rec{
		inGroup(0, "file.read", nil),
		inGroup(1, "sql.query", nil),
		inGroup(2, "web.search", transient(503, 0)),
		poison(body(task(sc, 3, "file.write", "1", nil).set("run_id", groups[3]).set("schema_version", 2)), deadletter.ReasonSchemaInvalid, "schema_version 2 in group B (fifo_poison dead_letter: the group goes on)"),
		inGroup(4, "file.write", nil),
		inGroup(5, "vector.search", nil),
	}
	for i := range fifo {
		fifo[i].group = groups[i]
	}
	fifo[4].outcome, fifo[4].reason, fifo[4].why = OutcomeRetry, "", "after the failure of run-fifo-A in this batch: reported, not processed (FIFO order)"
	add(scenario{name: sc, fifo: true, description: "FIFO records of two message groups; a transient failure in the middle of run-fifo-A stops that group", records: fifo})

	sc = "attributes-10"
	r10a := valid(sc, 0, "web.search", nil, 1)
	r10a.msgAttrs = tenAttrs()
	r10b := poison(body(base(sc, 1).set("tool", "web.crawl")), deadletter.ReasonToolUnknown, "ten attributes and an unknown tool: the dead letter folds two attributes into dlq_meta")
	r10b.msgAttrs = tenAttrs()
	add(scenario{name: sc, description: "messages with 10 message attributes (the SQS maximum), incl. Binary and custom data types", records: []rec{r10a, r10b}})

	sc = "duplicate-key"
	dup := body(task(sc, 0, "email.send", "1", nil))
	add(scenario{name: sc, description: "the same task delivered twice (same idempotency_key): done once, the second is a no-op", records: []rec{
		{body: dup, receive: 1, outcome: OutcomeOK, why: "first delivery: done"},
		{body: dup, receive: 1, outcome: OutcomeOK, why: "second delivery of a done key: acknowledged as a no-op"},
	}})

	sc = "key-reused"
	first := task(sc, 0, "email.send", "1", nil)
	args := toolArgs("email.send", 0).set("to", []string{"payouts@example.com"})
	add(scenario{name: sc, description: "an idempotency key reused for other args: the first task is done, the second is never run", records: []rec{
		{body: body(first), receive: 1, outcome: OutcomeOK, why: "first task with the key: done, its args digest kept"},
		{body: body(first.set("task_id", "task-key-reused-001").set("args", args)), receive: 1, outcome: OutcomeDeadLetter,
			reason: deadletter.ReasonIdempotencyKeyReused, why: "the same key with other args: idempotency_key_reused, dead-lettered at once, never run"},
	}})

	sc = "mixed"
	mix := []rec{
		valid(sc, 0, "web.search", nil, 1),
		valid(sc, 1, "email.send", nil, 1),
		poison(`{"task_id": "task-mixed-002", "tool": `, deadletter.ReasonJSONInvalid, "a truncated body"),
		poison(body(task(sc, 3, "sql.query", "1", nil).without("tenant")), deadletter.ReasonSchemaInvalid, "tenant missing"),
		poison(body(task(sc, 4, "web.crawl", "1", nil)), deadletter.ReasonToolUnknown, "web.crawl is not in the catalog"),
		poison(body(task(sc, 5, "http.fetch", "9", nil)), deadletter.ReasonToolVersionUnsupported, "http.fetch version 9"),
		valid(sc, 6, "web.search", transient(503, 2), 1),
		valid(sc, 7, "http.fetch", transient(429, 0), 4),
		valid(sc, 8, "email.send", kind("timeout_after_effect"), 1),
		valid(sc, 9, "sql.query", kind("auth", kv{"code", "AccessDenied"}), 1),
		valid(sc, 10, "vector.search", kind("dependency_open", kv{"dependency", "vector-db"}), 4),
		valid(sc, 11, "code.exec", kind("policy_limit"), 1),
		valid(sc, 12, "http.fetch", kind("signature_invalid"), 1),
		valid(sc, 13, "email.send", kind("guardrail_reject"), 1),
		valid(sc, 14, "code.exec", kind("panic"), 1),
	}
	dupMixed := body(task(sc, 15, "file.write", "1", nil))
	mix = append(mix,
		rec{body: dupMixed, receive: 1, outcome: OutcomeOK, why: "first delivery: done"},
		rec{body: dupMixed, receive: 1, outcome: OutcomeOK, why: "second delivery of a done key: a no-op"},
		valid(sc, 17, "web.search", transient(503, 2), 2),
	)
	add(scenario{name: sc, description: "one of everything: the demo's workload", records: mix})

	add(largeBatch(100))

	// Malformed events.
	add(scenario{name: "not-sqs-event", description: "an S3 event, not an SQS event: the handler refuses it with an error",
		raw: `{"Records":[{"eventVersion":"2.1","eventSource":"aws:s3","awsRegion":"us-east-1","eventTime":"2026-11-29T12:00:00.000Z","eventName":"ObjectCreated:Put","s3":{"s3SchemaVersion":"1.0","bucket":{"name":"agentdlq-evals","arn":"arn:aws:s3:::agentdlq-evals"},"object":{"key":"agent-tasks/2026-11-29/evals.jsonl","size":2048,"eTag":"d41d8cd98f00b204e9800998ecf8427e"}}}]}`})

	sc = "record-without-attributes"
	noAttrs := valid(sc, 0, "file.read", nil, 1)
	noAttrs.noAttributes = true
	noAttrs.why = "no attributes object (receive count unknown): a valid task is processed"
	emptyAttrs := poison(`not json`, deadletter.ReasonJSONInvalid, "empty attributes object and a body that is not JSON")
	emptyAttrs.emptyAttributes = true
	add(scenario{name: sc, description: "records without system attributes: processed; poison needs no receive count", records: []rec{noAttrs, emptyAttrs}})

	sc = "receive-count-not-a-number"
	nan := valid(sc, 0, "vector.search", nil, 1)
	nan.receiveRaw = "four"
	nan.why = "ApproximateReceiveCount \"four\" (unknown): a valid task is processed"
	nanPoison := poison(body(base(sc, 1).set("args", "oops")), deadletter.ReasonSchemaInvalid, "ApproximateReceiveCount \"\" and args not an object")
	nanPoison.receive, nanPoison.receiveRaw = 0, ""
	add(scenario{name: sc, description: "receive counts that are not numbers: read as unknown, never as the last receive", records: []rec{nan, nanPoison}})

	add(scenario{name: "empty-records", description: "an SQS event with no records: nothing to do, no failures", records: nil})

	return scs
}

// largeBatch is n valid ~1 KB tasks, each with its own idempotency key (a
// repeated key would be a no-op after its first record, and time less work).
func largeBatch(n int) scenario {
	const sc = "large-batch"
	rs := make([]rec, 0, n)
	for i := 0; i < n; i++ {
		rs = append(rs, valid(sc, i, tools[i%len(tools)], nil, 1))
	}
	return scenario{name: sc, description: strconv.Itoa(n) + " valid ~1 KB tasks", records: withAttrs(sc, rs)}
}

// LargeBatch renders largeBatch(n) as an SQS event file: the batches of 10
// and 10,000 that `make bench-sizes` compares with the peer.
func LargeBatch(n int) ([]byte, error) {
	data, _, err := largeBatch(n).render()
	return data, err
}

// ---------------------------------------------------------------------------
// Deterministic ids and checksums.

func sha(b []byte) []byte { s := sha256.Sum256(b); return s[:] }

func uuid(sc string, i int) string {
	h := sha([]byte(fmt.Sprintf("agentdlq-fixture/%s/%d", sc, i)))
	h[6] = h[6]&0x0f | 0x40
	h[8] = h[8]&0x3f | 0x80
	x := hex.EncodeToString(h[:16])
	return x[:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:32]
}

func receiptHandle(sc string, i int) string {
	seed := []byte(fmt.Sprintf("receipt/%s/%d", sc, i))
	a := sha(seed)
	b := sha(a)
	c := sha(b)
	return "AQEB" + base64.StdEncoding.EncodeToString(append(append(a, b...), c[:18]...))
}

func ms(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

func md5hex(b []byte) string { s := md5.Sum(b); return hex.EncodeToString(s[:]) }

// md5OfAttributes is SQS's MD5OfMessageAttributes: for each attribute by
// name, the name, data type, transport type (1 string, 2 binary) and value,
// each length-prefixed (4 bytes, big endian).
func md5OfAttributes(attrs map[string]sqsAttribute) string {
	names := make([]string, 0, len(attrs))
	for n := range attrs {
		names = append(names, n)
	}
	sort.Strings(names)
	h := md5.New()
	put := func(b []byte) {
		var l [4]byte
		binary.BigEndian.PutUint32(l[:], uint32(len(b)))
		h.Write(l[:])
		h.Write(b)
	}
	for _, n := range names {
		a := attrs[n]
		put([]byte(n))
		put([]byte(a.DataType))
		if a.StringValue != nil {
			h.Write([]byte{1})
			put([]byte(*a.StringValue))
		} else {
			h.Write([]byte{2})
			put(a.BinaryValue)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}
