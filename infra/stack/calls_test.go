package stack

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/functions/batch"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/local/topology"
	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/processed"
	"github.com/agentdlq/agentdlq/triage/store"
)

// The IAM actions each role's code calls are derived from the narrow client
// interfaces its code is written against (the SDK methods they list, with
// the SDK's signatures), never typed by hand: a role that gains an action no
// interface names fails TestRolesGrantWhatTheCodeCalls, and so does code that
// starts calling what its role lacks.

// iface is the method set of an interface type.
func iface[T any]() reflect.Type { return reflect.TypeOf((*T)(nil)).Elem() }

// batchedAs maps SDK calls to the IAM action that authorizes them where the
// names differ; "" means no permission is needed.
var batchedAs = map[string]string{
	"sqs:ChangeMessageVisibilityBatch": "sqs:ChangeMessageVisibility",
	"sqs:SendMessageBatch":             "sqs:SendMessage",
	"sqs:DeleteMessageBatch":           "sqs:DeleteMessage",
	"s3:ListObjectsV2":                 "s3:ListBucket",
	"sts:GetCallerIdentity":            "", // answers any caller
}

var sdkPackage = regexp.MustCompile(`^github\.com/aws/aws-sdk-go-v2/service/([a-z0-9]+)$`)

// sdkActions lists the IAM actions of an interface of SDK client methods
// (func(ctx, *<service>.XInput, ...func(*<service>.Options))).
func sdkActions(t *testing.T, ts ...reflect.Type) []string {
	t.Helper()
	var out []string
	for _, typ := range ts {
		require.Equal(t, reflect.Interface, typ.Kind(), typ.String())
		for i := range typ.NumMethod() {
			m := typ.Method(i)
			require.GreaterOrEqual(t, m.Type.NumIn(), 2, "%s.%s is not an SDK call", typ, m.Name)
			in := m.Type.In(1)
			require.Equal(t, reflect.Pointer, in.Kind(), "%s.%s is not an SDK call", typ, m.Name)
			svc := sdkPackage.FindStringSubmatch(in.Elem().PkgPath())
			require.NotNil(t, svc, "%s.%s takes %s, not an SDK input", typ, m.Name, in)
			require.Equal(t, m.Name+"Input", in.Elem().Name(), "%s.%s", typ, m.Name)
			action := svc[1] + ":" + m.Name
			if a, ok := batchedAs[action]; ok {
				action = a
			}
			if action != "" {
				out = append(out, action)
			}
		}
	}
	return out
}

// dynamoRecorder is a ledger.DynamoAPI that records the calls and the
// attribute names each UpdateItem accesses (dynamodb:Attributes): those its
// update expression writes and those its condition reads.
type dynamoRecorder struct {
	calls      []string
	attributes []string
}

var _ ledger.DynamoAPI = (*dynamoRecorder)(nil)

var attrName = regexp.MustCompile(`#?[A-Za-z_][A-Za-z0-9_]*`)
var updateKeywords = map[string]bool{"SET": true, "REMOVE": true, "ADD": true, "DELETE": true}

func (d *dynamoRecorder) GetItem(_ context.Context, _ *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	d.calls = append(d.calls, "dynamodb:GetItem")
	return &dynamodb.GetItemOutput{}, nil
}

func (d *dynamoRecorder) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	d.calls = append(d.calls, "dynamodb:UpdateItem")
	for k := range in.Key {
		d.attributes = append(d.attributes, k)
	}
	// The names an update expression writes: every name that is not a
	// keyword, a value placeholder (:x) or a function.
	expr := regexp.MustCompile(`:[A-Za-z0-9_]+`).ReplaceAllString(*in.UpdateExpression, "")
	for _, name := range attrName.FindAllString(expr, -1) {
		if updateKeywords[name] || name == "if_not_exists" || name == "list_append" {
			continue
		}
		if real, ok := in.ExpressionAttributeNames[name]; ok {
			name = real
		}
		d.attributes = append(d.attributes, name)
	}
	if in.ConditionExpression != nil {
		cond := regexp.MustCompile(`:[A-Za-z0-9_]+`).ReplaceAllString(*in.ConditionExpression, "")
		for _, name := range attrName.FindAllString(cond, -1) {
			if conditionKeywords[name] {
				continue
			}
			if real, ok := in.ExpressionAttributeNames[name]; ok {
				name = real
			}
			d.attributes = append(d.attributes, name)
		}
	}
	return &dynamodb.UpdateItemOutput{}, nil
}

var conditionKeywords = map[string]bool{"AND": true, "OR": true, "NOT": true, "BETWEEN": true, "IN": true,
	"attribute_exists": true, "attribute_not_exists": true, "attribute_type": true, "begins_with": true, "contains": true, "size": true}

// ledgerCall runs one ledger.Ledger method on ledger.Dynamo over a recorder.
var ledgerCall = map[string]func(ctx context.Context, l *ledger.Dynamo){
	"Begin": func(ctx context.Context, l *ledger.Dynamo) {
		_, _ = l.Begin(ctx, "k", "o", "", time.Now(), time.Minute)
	},
	"StartEffect": func(ctx context.Context, l *ledger.Dynamo) { _ = l.StartEffect(ctx, "k", "o", time.Now()) },
	"Complete":    func(ctx context.Context, l *ledger.Dynamo) { _ = l.Complete(ctx, "k", "o", "r", time.Now()) },
	"CompleteReadOnly": func(ctx context.Context, l *ledger.Dynamo) {
		_, _ = l.CompleteReadOnly(ctx, "k", "o", "d", "r", time.Now())
	},
	"Release": func(ctx context.Context, l *ledger.Dynamo) { _ = l.Release(ctx, "k", "o", time.Now()) },
	"DeadLettered": func(ctx context.Context, l *ledger.Dynamo) {
		_, _ = l.DeadLettered(ctx, "k", "json_invalid", time.Now())
	},
	"Redriven": func(ctx context.Context, l *ledger.Dynamo) { _, _ = l.Redriven(ctx, "k", time.Now()) },
	"Get":      func(ctx context.Context, l *ledger.Dynamo) { _, _, _ = l.Get(ctx, "k") },
	"Reconcile": func(ctx context.Context, l *ledger.Dynamo) {
		// Both outcomes: each writes attributes of its own.
		_, _ = l.Reconcile(ctx, "k", ledger.Reconciliation{Outcome: ledger.OutcomeEffectConfirmed, Receipt: "r", By: "o"}, time.Now())
		_, _ = l.Reconcile(ctx, "k", ledger.Reconciliation{Outcome: ledger.OutcomeNoEffect, By: "o"}, time.Now())
	},
}

// ledgerActions runs the named ledger methods on ledger.Dynamo and returns
// the DynamoDB actions they call and the attributes their updates write.
func ledgerActions(t *testing.T, methods ...string) (actions, attributes []string) {
	t.Helper()
	rec := &dynamoRecorder{}
	l := ledger.NewDynamo(rec, "ledger")
	for _, m := range methods {
		call, ok := ledgerCall[m]
		require.True(t, ok, "ledger method %s: add it to ledgerCall", m)
		call(context.Background(), l)
	}
	return rec.calls, rec.attributes
}

func methodNames(typ reflect.Type) []string {
	var out []string
	for i := range typ.NumMethod() {
		out = append(out, typ.Method(i).Name)
	}
	return out
}

// ledgerMethodsCalledIn lists the methods that the non-test Go files of dir
// call on a field named Ledger (r.Ledger.Get(…)).
func ledgerMethodsCalledIn(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(fx.root, dir, "*.go"))
	require.NoError(t, err)
	seen := map[string]bool{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		require.NoError(t, err)
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
				if inner, ok := sel.X.(*ast.SelectorExpr); ok && inner.Sel.Name == "Ledger" {
					seen[sel.Sel.Name] = true
				}
			}
			return true
		})
	}
	out := make([]string, 0, len(seen))
	for m := range seen {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// codeCalls is, per role, what its code calls.
type codeCalls struct {
	worker, triage, redrive []string
	// redriveWrites are the ledger attributes the redrive's updates access
	// (its redrive count); reconcileWrites those of its Reconcile (empty
	// when the redrive package does not call it).
	redriveWrites, reconcileWrites []string
}

func deriveCalls(t *testing.T) codeCalls {
	t.Helper()
	require.ElementsMatch(t, methodNames(iface[ledger.Ledger]()), keys(mapOf(ledgerCall)), "ledgerCall covers ledger.Ledger")
	dynamo := sdkActions(t, iface[ledger.DynamoAPI]())
	var c codeCalls

	// The worker (functions/sampleworker/lambda): the batch processor's SQS
	// client and the whole ledger on DynamoDB. The event source mapping
	// polls the hot queue with the function's role: ReceiveMessage,
	// DeleteMessage and GetQueueAttributes are Lambda's, not the code's.
	workerLedger, _ := ledgerActions(t, methodNames(iface[ledger.Ledger]())...)
	c.worker = append(sdkActions(t, iface[batch.SQSAPI](), iface[batch.S3API]()), workerLedger...)
	c.worker = append(c.worker, "sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes")

	// The triage Lambda: the scan, the alarm summary, the eval bucket, the
	// ledger read (triage.KeyReader) and the worker's Processed metric
	// (processed.CloudWatch, main.go's triage.ProcessedSource). The summary's SNS Publish is
	// triage/lambda's PublishAPI, in package main, which no test imports.
	triageLedger, _ := ledgerActions(t, methodNames(iface[triage.KeyReader]())...)
	c.triage = append(sdkActions(t, iface[triage.ScanAPI](), iface[store.S3API](), iface[processed.GetMetricDataAPI]()), triageLedger...)
	c.triage = append(c.triage, "sns:Publish")

	// The redrive role: what `agentdlq redrive` (and pause) calls in AWS:
	// finding the queues, the gate, the selective redrive (with the claim
	// checks it reads back), move tasks, the audit, and the ledger methods the redrive package calls, plus Get
	// (`agentdlq ledger get`).
	// Reconcile (`agentdlq ledger reconcile`, redrive.Redriver.Reconcile)
	// has a statement of its own.
	redriveMethods := append(ledgerMethodsCalledIn(t, "redrive"), "Get")
	redriveLedger, _ := ledgerActions(t, redriveMethods...)
	_, c.redriveWrites = ledgerActions(t, slices.DeleteFunc(slices.Clone(redriveMethods), func(m string) bool { return m == "Reconcile" })...)
	if slices.Contains(redriveMethods, "Reconcile") {
		_, c.reconcileWrites = ledgerActions(t, "Reconcile")
	}
	c.redrive = append(sdkActions(t, iface[topology.ResolveAPI](), iface[redrive.API](),
		iface[audit.S3PutAPI](), iface[redrive.EvidenceAPI](), iface[audit.S3ReadAPI](), iface[redrive.IdentityAPI](), iface[redrive.LambdaAPI]()), redriveLedger...)

	for _, a := range append(append(c.worker, c.triage...), c.redrive...) {
		if strings.HasPrefix(a, "dynamodb:") {
			assert.Contains(t, dynamo, a, "a ledger call outside ledger.DynamoAPI")
		}
	}
	return c
}

func mapOf[V any](m map[string]V) map[string][]string {
	out := map[string][]string{}
	for k := range m {
		out[k] = nil
	}
	return out
}

func uniq(list []string) []string {
	out := slices.Clone(list)
	slices.Sort(out)
	return slices.Compact(out)
}

// notCode are the actions a role needs for what the platform does on its
// behalf: writing its logs, and decrypting with the stack's keys.
func notCode(a string) bool { return strings.HasPrefix(a, "logs:") || strings.HasPrefix(a, "kms:") }

// TestRolesGrantWhatTheCodeCalls: each Lambda role and each redrive role is
// allowed exactly the actions its code calls (derived from the interfaces),
// besides its logs and keys.
func TestRolesGrantWhatTheCodeCalls(t *testing.T) {
	require.True(t, fx.synthOK)
	calls := deriveCalls(t)
	for _, name := range []string{mainStack, kmsStack} {
		s := fx.stacks[name]
		t.Run(name, func(t *testing.T) {
			grants, _ := s.roleGrants(t)
			granted := func(role string) []string {
				var out []string
				for _, a := range keys(allowed(grants[role])) {
					if !notCode(a) {
						out = append(out, a)
					}
				}
				return out
			}
			assert.Equal(t, uniq(calls.triage), granted(s.triageRole(t)), "the triage role")
			for _, def := range s.defs {
				assert.Equal(t, uniq(calls.worker), granted(s.roleOf(t, def.Name, "WorkerRole")), "the worker role of %s", def.Name)
				assert.Equal(t, uniq(calls.redrive), granted(s.roleOf(t, def.Name, "RedriveRole")), "the redrive role of %s", def.Name)
			}
		})
	}
	// The redrive role's UpdateItem is restricted to what its updates write.
	assert.Subset(t, RedriveLedgerAttributes, uniq(calls.redriveWrites), "RedriveLedgerAttributes must cover what the redrive writes")
	assert.Equal(t, uniq(RedriveLedgerAttributes), uniq(calls.redriveWrites), "and nothing more")
	// Its reconcile's UpdateItem, in a statement of its own, to what
	// Reconcile accesses: a grant the code does not use fails, and so does
	// a reconcile that writes an attribute the grant lacks.
	assert.Equal(t, uniq(ReconcileLedgerAttributes), uniq(calls.reconcileWrites), "ReconcileLedgerAttributes must be what Reconcile accesses, no more, no less")
}

// TestDerivedCalls pins what the derivation finds today, so that a change in
// the interfaces shows in review next to the policy it changes.
func TestDerivedCalls(t *testing.T) {
	calls := deriveCalls(t)
	assert.Equal(t, []string{"dynamodb:GetItem", "dynamodb:UpdateItem", "s3:PutObject", "sqs:ChangeMessageVisibility", "sqs:DeleteMessage",
		"sqs:GetQueueAttributes", "sqs:ReceiveMessage", "sqs:SendMessage"}, uniq(calls.worker))
	assert.Equal(t, []string{"cloudwatch:GetMetricData", "dynamodb:GetItem", "s3:GetObject", "s3:ListBucket", "s3:PutObject", "sns:Publish",
		"sqs:ChangeMessageVisibility", "sqs:GetQueueAttributes", "sqs:ReceiveMessage"}, uniq(calls.triage))
	assert.NotContains(t, calls.worker, "dynamodb:PutItem")
	assert.NotContains(t, calls.worker, "dynamodb:DeleteItem")
	assert.NotContains(t, calls.redrive, "dynamodb:BatchGetItem")
	assert.NotContains(t, calls.triage, "dynamodb:BatchGetItem")
}
