package ledger

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/agentdlq/agentdlq/events/deadletter"
)

// DynamoAPI is what Dynamo calls on DynamoDB, with the SDK's signatures: a
// *dynamodb.Client satisfies it.
type DynamoAPI interface {
	GetItem(ctx context.Context, params *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, params *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

// Dynamo is the Ledger on a DynamoDB table with partition key `pk` (a
// string: the idempotency key). Every change is one conditional UpdateItem,
// so concurrent deliveries of the same key cannot both hold its lease.
//
// Item attributes: pk, state, args_digest, owner, lease_until and updated_at (UTC
// timestamps in a fixed-width RFC 3339 form, so that they compare as
// strings), effect_started (BOOL), receipt, last_reason, dead_letter_count
// and redrive_count (numbers, incremented with ADD), expires_at (epoch
// seconds: the table's TTL attribute), and, once the owner reconciled an
// unknown effect, reconciled, reconciled_by and reconciled_at.
type Dynamo struct {
	api   DynamoAPI
	table string
	ttl   time.Duration
}

var _ Ledger = (*Dynamo)(nil)

// NewDynamo returns the ledger on table. Entries expire DefaultTTL after
// their last update.
func NewDynamo(api DynamoAPI, table string) *Dynamo {
	return &Dynamo{api: api, table: table, ttl: DefaultTTL}
}

// API is the DynamoDB client the ledger calls: a redrive asks its endpoint
// (the SDK client's Options().BaseEndpoint) to tell the local emulators
// from AWS.
func (d *Dynamo) API() DynamoAPI { return d.api }

// timeLayout is RFC 3339 with a fixed nine-digit fraction, always in UTC, so
// that string order is time order (the lease condition compares strings).
const timeLayout = "2006-01-02T15:04:05.000000000Z"

func ts(t time.Time) string { return t.UTC().Format(timeLayout) }

// names are the expression attribute names (state and owner are reserved words).
var names = map[string]string{"#st": "state", "#ow": "owner"}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

func (d *Dynamo) key(k string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": s(k)}
}

// touch adds the values every update sets: updated_at and expires_at.
func (d *Dynamo) touch(vals map[string]types.AttributeValue, now time.Time) map[string]types.AttributeValue {
	vals[":now"] = s(ts(now))
	vals[":exp"] = n(now.Add(d.ttl).Unix())
	return vals
}

// beginExact is Begin on key as it is: the claim (see claimCond) that sets
// in_progress and the lease.
func (d *Dynamo) beginExact(ctx context.Context, key, owner, digest string, now time.Time, lease time.Duration) (Entry, error) {
	return d.claim(ctx, key, owner, digest, now, claimWrite{
		op: "begin", during: "the claim",
		set:  "SET #st = :inprog, #ow = :owner, lease_until = :lease, updated_at = :now, expires_at = :exp",
		vals: map[string]types.AttributeValue{":lease": s(ts(now.Add(lease)))},
	})
}

// claimCond is the condition of Begin and CompleteReadOnly, Memory's claim
// written for DynamoDB: the item has no state (a new key, or one only
// Redriven touched), or it is not done and no other owner holds an
// unexpired lease on it. The first clause is spelled out although DynamoDB
// would let a stateless item through the rest (there `#st <> :done` is true
// for a missing attribute), so that neither write rests on a rule some
// emulators get wrong.
const claimCond = "attribute_not_exists(#st) OR (#st <> :done AND (#st <> :inprog OR #ow = :owner OR attribute_not_exists(lease_until) OR lease_until <= :now))"

// claimWrite is what Begin and CompleteReadOnly each give claim: the
// operation's name (for errors), the SET clause, the clause after it
// (REMOVE, or none) and the expression values of its own.
type claimWrite struct {
	op, during  string
	set, remove string
	vals        map[string]types.AttributeValue
}

// claim is the conditional update Begin and CompleteReadOnly share, on
// claimCond: with a digest it adds the digest's condition and records it
// where the item has none (if_not_exists); it returns the item as it was
// (the zero Entry for a new key) or, when the condition fails, Begin's
// error for it (conflict), reading the item where the emulator does not
// return it.
func (d *Dynamo) claim(ctx context.Context, key, owner, digest string, now time.Time, w claimWrite) (Entry, error) {
	update, cond := w.set, claimCond
	vals := d.touch(w.vals, now)
	vals[":inprog"], vals[":done"], vals[":owner"] = s(string(StateInProgress)), s(string(StateDone)), s(owner)
	if digest != "" {
		update += ", args_digest = if_not_exists(args_digest, :digest)"
		cond = "(attribute_not_exists(args_digest) OR args_digest = :digest) AND (" + cond + ")"
		vals[":digest"] = s(digest)
	}
	out, err := d.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           d.tableName(),
		Key:                                 d.key(key),
		UpdateExpression:                    aws.String(update + w.remove),
		ConditionExpression:                 aws.String(cond),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           vals,
		ReturnValues:                        types.ReturnValueAllOld,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		if len(out.Attributes) == 0 {
			return Entry{}, nil
		}
		return decodeEntry(out.Attributes)
	}
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return Entry{}, wrap(w.op, err)
	}
	item := ccf.Item
	if item == nil { // the emulator does not return the item: read it
		e, ok, gerr := d.getExact(ctx, key)
		if gerr != nil {
			return Entry{}, gerr
		}
		if !ok {
			return Entry{}, fmt.Errorf("%w: the entry changed during %s", ErrLeased, w.during)
		}
		return conflict(e, digest)
	}
	e, derr := decodeEntry(item)
	if derr != nil {
		return Entry{}, derr
	}
	return conflict(e, digest)
}

// conflict is Begin's error for the entry that failed its condition, in
// the precedence the Ledger doc gives.
func conflict(e Entry, digest string) (Entry, error) {
	switch {
	case e.KeyReused(digest):
		return e, ErrKeyReused
	case e.State == StateDone:
		return e, ErrDone
	}
	return e, ErrLeased
}

// StartEffect implements Ledger. It fails with ErrLeased when the caller no
// longer holds the key's lease: then the mutating call must not start.
func (d *Dynamo) StartEffect(ctx context.Context, key, owner string, now time.Time) error {
	_, err := d.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                d.tableName(),
		Key:                      d.key(key),
		UpdateExpression:         aws.String("SET effect_started = :true, updated_at = :now, expires_at = :exp"),
		ConditionExpression:      aws.String("#st = :inprog AND #ow = :owner"),
		ExpressionAttributeNames: names,
		ExpressionAttributeValues: d.touch(map[string]types.AttributeValue{
			":true": &types.AttributeValueMemberBOOL{Value: true}, ":inprog": s(string(StateInProgress)), ":owner": s(owner),
		}, now),
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return fmt.Errorf("%w: start effect on %q: the lease is not %q's", ErrLeased, key, owner)
	}
	return wrap("start effect", err)
}

// Complete implements Ledger.
func (d *Dynamo) Complete(ctx context.Context, key, owner, receipt string, now time.Time) error {
	_, err := d.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                d.tableName(),
		Key:                      d.key(key),
		UpdateExpression:         aws.String("SET #st = :done, receipt = :receipt, #ow = :owner, updated_at = :now, expires_at = :exp REMOVE lease_until"),
		ExpressionAttributeNames: names,
		ExpressionAttributeValues: d.touch(map[string]types.AttributeValue{
			":done": s(string(StateDone)), ":receipt": s(receipt), ":owner": s(owner),
		}, now),
	})
	return wrap("complete", err)
}

// CompleteReadOnly implements Ledger: one conditional update, Begin's
// condition (claimCond and the digest) with Complete's changes.
func (d *Dynamo) CompleteReadOnly(ctx context.Context, key, owner, digest, receipt string, now time.Time) (Entry, error) {
	return d.claim(ctx, key, owner, digest, now, claimWrite{
		op: "complete read-only", during: "the completion",
		set:    "SET #st = :done, receipt = :receipt, #ow = :owner, updated_at = :now, expires_at = :exp",
		remove: " REMOVE lease_until",
		vals:   map[string]types.AttributeValue{":receipt": s(receipt)},
	})
}

// Release implements Ledger: it ends the caller's lease, and does nothing
// when the caller does not hold it.
func (d *Dynamo) Release(ctx context.Context, key, owner string, now time.Time) error {
	_, err := d.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                d.tableName(),
		Key:                      d.key(key),
		UpdateExpression:         aws.String("SET updated_at = :now, expires_at = :exp REMOVE lease_until"),
		ConditionExpression:      aws.String("#st = :inprog AND #ow = :owner"),
		ExpressionAttributeNames: names,
		ExpressionAttributeValues: d.touch(map[string]types.AttributeValue{
			":inprog": s(string(StateInProgress)), ":owner": s(owner),
		}, now),
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil
	}
	return wrap("release", err)
}

// DeadLettered implements Ledger; the count is incremented with ADD.
func (d *Dynamo) DeadLettered(ctx context.Context, key string, reason deadletter.Reason, now time.Time) (Entry, error) {
	out, err := d.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                d.tableName(),
		Key:                      d.key(key),
		UpdateExpression:         aws.String("SET #st = :dl, last_reason = :reason, updated_at = :now, expires_at = :exp REMOVE lease_until ADD dead_letter_count :one"),
		ExpressionAttributeNames: map[string]string{"#st": "state"},
		ExpressionAttributeValues: d.touch(map[string]types.AttributeValue{
			":dl": s(string(StateDeadLettered)), ":reason": s(string(reason)), ":one": n(1),
		}, now),
		ReturnValues: types.ReturnValueAllNew,
	})
	if err != nil {
		return Entry{}, wrap("dead-lettered", err)
	}
	return decodeEntry(out.Attributes)
}

// Redriven implements Ledger; the count is incremented with ADD.
func (d *Dynamo) Redriven(ctx context.Context, key string, now time.Time) (Entry, error) {
	out, err := d.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 d.tableName(),
		Key:                       d.key(key),
		UpdateExpression:          aws.String("SET updated_at = :now, expires_at = :exp ADD redrive_count :one"),
		ExpressionAttributeValues: d.touch(map[string]types.AttributeValue{":one": n(1)}, now),
		ReturnValues:              types.ReturnValueAllNew,
	})
	if err != nil {
		return Entry{}, wrap("redriven", err)
	}
	return decodeEntry(out.Attributes)
}

// reconcileExact is Reconcile on key as it is: one conditional update, on the condition
// that the effect is unknown (Entry.EffectUnknown). It writes state and
// receipt (effect confirmed) or removes effect_started (no effect), and
// sets reconciled, reconciled_by, reconciled_at, updated_at and expires_at;
// its condition reads effect_started, state, receipt and lease_until. When the condition fails it reads the item
// to tell a repeat (a no-op) from a conflict.
func (d *Dynamo) reconcileExact(ctx context.Context, key string, rc Reconciliation, now time.Time) (Entry, error) {
	if err := rc.Validate(); err != nil {
		return Entry{}, err
	}
	vals := d.touch(map[string]types.AttributeValue{
		":true": &types.AttributeValueMemberBOOL{Value: true}, ":done": s(string(StateDone)), ":inprog": s(string(StateInProgress)),
		":empty": s(""), ":rc": s(string(rc.Outcome)), ":by": s(rc.By),
	}, now)
	update := "SET reconciled = :rc, reconciled_by = :by, reconciled_at = :now, updated_at = :now, expires_at = :exp REMOVE effect_started"
	if rc.Outcome == OutcomeEffectConfirmed {
		update = "SET #st = :done, receipt = :receipt, reconciled = :rc, reconciled_by = :by, reconciled_at = :now, updated_at = :now, expires_at = :exp"
		vals[":receipt"] = s(rc.Receipt)
	}
	out, err := d.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        d.tableName(),
		Key:              d.key(key),
		UpdateExpression: aws.String(update),
		ConditionExpression: aws.String("effect_started = :true AND #st <> :done AND (attribute_not_exists(receipt) OR receipt = :empty)" +
			" AND (#st <> :inprog OR attribute_not_exists(lease_until) OR lease_until <= :now)"),
		ExpressionAttributeNames:            map[string]string{"#st": "state"},
		ExpressionAttributeValues:           vals,
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		return decodeEntry(out.Attributes)
	}
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return Entry{}, wrap("reconcile", err)
	}
	if ccf.Item == nil { // the emulator does not return the item: read it
		e, ok, gerr := d.getExact(ctx, key)
		if gerr != nil {
			return Entry{}, gerr
		}
		return reconcileRefusal(key, e, ok, rc, now)
	}
	e, derr := decodeEntry(ccf.Item)
	if derr != nil {
		return Entry{}, derr
	}
	return reconcileRefusal(key, e, true, rc, now)
}

// getExact is Get on key as it is, with a strongly consistent read.
func (d *Dynamo) getExact(ctx context.Context, key string) (Entry, bool, error) {
	out, err := d.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: d.tableName(), Key: d.key(key), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return Entry{}, false, wrap("get", err)
	}
	if len(out.Item) == 0 {
		return Entry{}, false, nil
	}
	e, err := decodeEntry(out.Item)
	return e, err == nil, err
}

func (d *Dynamo) tableName() *string { return aws.String(d.table) }

// DecodeItem decodes a ledger item (from GetItem or BatchGetItem).
func DecodeItem(item map[string]types.AttributeValue) (Entry, error) { return decodeEntry(item) }

func decodeEntry(item map[string]types.AttributeValue) (Entry, error) {
	var e Entry
	var errs []error
	str := func(name string) string {
		if v, ok := item[name].(*types.AttributeValueMemberS); ok {
			return v.Value
		}
		return ""
	}
	num := func(name string) int64 {
		v, ok := item[name].(*types.AttributeValueMemberN)
		if !ok {
			return 0
		}
		i, err := strconv.ParseInt(v.Value, 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
		return i
	}
	tm := func(name string) time.Time {
		v := str(name)
		if v == "" {
			return time.Time{}
		}
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
		return t
	}
	e.Key = str("pk")
	e.State = State(str("state"))
	e.ArgsDigest = str("args_digest")
	e.Owner = str("owner")
	e.LeaseUntil = tm("lease_until")
	if v, ok := item["effect_started"].(*types.AttributeValueMemberBOOL); ok {
		e.EffectStarted = v.Value
	}
	e.Receipt = str("receipt")
	e.DeadLetterCount = int(num("dead_letter_count"))
	e.RedriveCount = int(num("redrive_count"))
	e.LastReason = deadletter.Reason(str("last_reason"))
	e.UpdatedAt = tm("updated_at")
	e.Reconciled = Outcome(str("reconciled"))
	e.ReconciledBy = str("reconciled_by")
	e.ReconciledAt = tm("reconciled_at")
	if exp := num("expires_at"); exp > 0 {
		e.ExpiresAt = time.Unix(exp, 0).UTC()
	}
	if len(errs) > 0 {
		return e, fmt.Errorf("ledger: item %q: %w", e.Key, errors.Join(errs...))
	}
	return e, nil
}

// wrap marks throttling, server faults and network failures (no API error
// at all: a refused connection, a timeout) as ErrUnavailable.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	var api smithy.APIError
	if !errors.As(err, &api) {
		return fmt.Errorf("%w: %s: %w", ErrUnavailable, op, err)
	}
	switch api.ErrorCode() {
	case "ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded",
		"InternalServerError", "ServiceUnavailable", "LimitExceededException", "TransactionConflictException":
		return fmt.Errorf("%w: %s: %w", ErrUnavailable, op, err)
	}
	if api.ErrorFault() == smithy.FaultServer {
		return fmt.Errorf("%w: %s: %w", ErrUnavailable, op, err)
	}
	return fmt.Errorf("ledger: %s: %w", op, err)
}

// Begin implements Ledger; a scoped key (Key) falls back to the task's
// unscoped entry while its own is unsettled (see Key and the package doc).
func (d *Dynamo) Begin(ctx context.Context, key, owner, digest string, now time.Time, lease time.Duration) (Entry, error) {
	return beginScoped(ctx, d, key, owner, digest, now, lease)
}

// Get implements Ledger, with the unscoped fallback of Begin.
func (d *Dynamo) Get(ctx context.Context, key string) (Entry, bool, error) {
	return getScoped(ctx, d, key)
}

// Reconcile implements Ledger, with the unscoped fallback of Begin.
func (d *Dynamo) Reconcile(ctx context.Context, key string, rc Reconciliation, now time.Time) (Entry, error) {
	return reconcileScoped(ctx, d, key, rc, now)
}
