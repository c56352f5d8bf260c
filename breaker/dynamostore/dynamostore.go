// Package dynamostore keeps breaker states in DynamoDB, shared by every
// worker instance of a pipeline: one item per (pipeline, dependency) in a
// table whose partition key is the string `pk` (the pipeline's ledger
// table serves). Every write is an UpdateItem conditioned on the version it was
// based on, so two workers never both move a breaker.
//
// The item: pk = "breaker:<len(pipeline)>:<pipeline>:<dependency>" (the
// length makes the form injective, as the ledger's scoped keys; no ledger
// key starts with "breaker:"), breaker_version (N), breaker_mode (S, for a
// reader of the table), breaker_state (S: the breaker.State as JSON),
// breaker_writer (S: a random token of the write, so that a write whose
// response was lost and whose retry failed its own condition is known as
// applied, not taken for a conflict and applied twice) and updated_at. It
// has no expires_at: a breaker's state does not expire.
//
// Beside them, one index item a pipeline lists its dependencies
// (breaker.Lister): pk = "breaker:dependencies:<pipeline>" (no breaker
// state's pk has a letter after "breaker:"), breaker_dependencies (SS). The
// first Put of a dependency (version 0 to 1) adds its name there with an
// UpdateItem ADD, which is idempotent, before it writes the state: a stored
// state is always listed, and listing is one GetItem, never a Scan. A
// Store's first write of a state already stored (by code before the
// index) adds it too. The
// index item's pk starts with KeyPrefix too, so a role held to the breaker
// items (dynamodb:LeadingKeys) may write it.
package dynamostore

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentdlq/agentdlq/breaker"
)

// Attributes are every attribute a Store writes (the IAM condition
// dynamodb:Attributes of a role that may force a breaker), and KeyPrefix
// starts every item's pk (dynamodb:LeadingKeys).
var Attributes = []string{"pk", "breaker_version", "breaker_mode", "breaker_state", "breaker_writer", "updated_at", IndexAttribute}

// IndexAttribute is the index item's string set of dependency names.
const IndexAttribute = "breaker_dependencies"

// KeyPrefix starts the pk of every breaker item.
const KeyPrefix = "breaker:"

// API is what Store calls on DynamoDB, with the SDK's signatures: a
// *dynamodb.Client satisfies it. IAM: dynamodb:GetItem and dynamodb:UpdateItem
// on the table (the worker's ledger grant: no new action), on items whose
// pk starts with KeyPrefix, writing only Attributes.
type API interface {
	GetItem(ctx context.Context, params *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, params *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

// Store is a breaker.Store on a DynamoDB table.
type Store struct {
	api   API
	table string
	// listed: the (pipeline, dependency) this Store has added to the
	// index. A state at version 1 or more that this Store has not listed
	// yet is listed before it is written (best effort), so that a state
	// stored before the index existed is listed by its next write.
	listed sync.Map
}

var (
	_ breaker.Store  = (*Store)(nil)
	_ breaker.Lister = (*Store)(nil)
)

// New returns the store on table.
func New(api API, table string) *Store { return &Store{api: api, table: table} }

// Key is the item's pk of a pipeline's dependency.
func Key(pipeline, dependency string) string {
	return "breaker:" + strconv.Itoa(len(pipeline)) + ":" + pipeline + ":" + dependency
}

// IndexKey is the pk of the item that lists a pipeline's dependencies.
func IndexKey(pipeline string) string { return KeyPrefix + "dependencies:" + pipeline }

// ErrEmptyDependency is returned by Put for a dependency named "" (a
// DynamoDB string set cannot hold an empty string).
var ErrEmptyDependency = errors.New("breaker: the dependency name is empty")

// MaxDependencies bounds a pipeline's index item, and MaxDependencyBytes a
// dependency's name, so that the item stays far under DynamoDB's 400 KB
// (256 names of 256 bytes: 64 KB) whatever names reach the store. A
// handler that takes a dependency's name from the task (the sample worker
// does) lets a producer write names; past the bound, Put refuses a new
// dependency (ErrTooManyDependencies), which stores no state for it, and
// the breaker admits its tasks as it does on any store error. The
// dependencies already listed keep their breakers.
const (
	MaxDependencies    = 256
	MaxDependencyBytes = 256
)

// ErrTooManyDependencies is returned by Put for a dependency not yet listed
// when the pipeline's index already holds MaxDependencies, and
// ErrDependencyTooLong for a name over MaxDependencyBytes.
var (
	ErrTooManyDependencies = fmt.Errorf("breaker: the pipeline already lists %d dependencies", MaxDependencies)
	ErrDependencyTooLong   = fmt.Errorf("breaker: the dependency name is over %d bytes", MaxDependencyBytes)
)

// Dependencies implements breaker.Lister: one strongly consistent GetItem
// of the pipeline's index item.
func (s *Store) Dependencies(ctx context.Context, pipeline string) ([]string, error) {
	out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), ConsistentRead: aws.Bool(true),
		Key:                  map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: IndexKey(pipeline)}},
		ProjectionExpression: aws.String(IndexAttribute),
	})
	if err != nil {
		return nil, fmt.Errorf("breaker %s: list dependencies: %w", pipeline, err)
	}
	deps := []string{}
	if out == nil || len(out.Item) == 0 {
		return deps, nil
	}
	set, ok := out.Item[IndexAttribute].(*types.AttributeValueMemberSS)
	if !ok {
		return nil, fmt.Errorf("breaker %s: the index item's %s is not a string set", pipeline, IndexAttribute)
	}
	deps = append(deps, set.Value...)
	slices.Sort(deps)
	return deps, nil
}

// index adds dependency to the pipeline's index item (idempotent), unless
// it holds MaxDependencies others (ErrTooManyDependencies).
func (s *Store) index(ctx context.Context, pipeline, dependency string) error {
	_, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        aws.String(s.table),
		Key:              map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: IndexKey(pipeline)}},
		UpdateExpression: aws.String("ADD " + IndexAttribute + " :d"),
		ConditionExpression: aws.String("attribute_not_exists(" + IndexAttribute + ") OR size(" + IndexAttribute + ") < :max OR contains(" +
			IndexAttribute + ", :name)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":d":    &types.AttributeValueMemberSS{Value: []string{dependency}},
			":name": &types.AttributeValueMemberS{Value: dependency},
			":max":  &types.AttributeValueMemberN{Value: strconv.Itoa(MaxDependencies)},
		},
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return fmt.Errorf("breaker %s/%s: %w", pipeline, dependency, ErrTooManyDependencies)
	}
	if err != nil {
		return fmt.Errorf("breaker %s/%s: list the dependency: %w", pipeline, dependency, err)
	}
	return nil
}

// Get implements breaker.Store, with a strongly consistent read.
func (s *Store) Get(ctx context.Context, pipeline, dependency string) (breaker.State, error) {
	out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: Key(pipeline, dependency)}},
	})
	if err != nil {
		return breaker.State{}, fmt.Errorf("breaker %s/%s: get: %w", pipeline, dependency, err)
	}
	if out == nil || len(out.Item) == 0 {
		return breaker.State{}, nil
	}
	raw, ok := out.Item["breaker_state"].(*types.AttributeValueMemberS)
	if !ok {
		return breaker.State{}, fmt.Errorf("breaker %s/%s: the item has no breaker_state", pipeline, dependency)
	}
	var st breaker.State
	if err := json.Unmarshal([]byte(raw.Value), &st); err != nil {
		return breaker.State{}, fmt.Errorf("breaker %s/%s: breaker_state: %w", pipeline, dependency, err)
	}
	if v, ok := out.Item["breaker_version"].(*types.AttributeValueMemberN); ok {
		n, err := strconv.ParseInt(v.Value, 10, 64)
		if err != nil {
			return breaker.State{}, fmt.Errorf("breaker %s/%s: breaker_version: %w", pipeline, dependency, err)
		}
		st.Version = n
	}
	return st, nil
}

// Put implements breaker.Store: an UpdateItem conditioned on the version.
// The first (version 0) is preceded by the index's UpdateItem: a failure
// there stores nothing. A later one is preceded by it once a Store and
// dependency (a state stored before the index existed gets listed), and a
// failure there is tried again with the next write.
func (s *Store) Put(ctx context.Context, pipeline, dependency string, st breaker.State) (breaker.State, error) {
	if dependency == "" {
		return breaker.State{}, fmt.Errorf("breaker %s: %w", pipeline, ErrEmptyDependency)
	}
	if len(dependency) > MaxDependencyBytes {
		return breaker.State{}, fmt.Errorf("breaker %s: %w", pipeline, ErrDependencyTooLong)
	}
	base := st.Version
	k := [2]string{pipeline, dependency}
	if _, ok := s.listed.Load(k); !ok {
		err := s.index(ctx, pipeline, dependency)
		if err != nil && base == 0 {
			return breaker.State{}, err
		}
		if err == nil || errors.Is(err, ErrTooManyDependencies) {
			// A full index is not tried again on every write of a state
			// stored before the index existed.
			s.listed.Store(k, true)
		}
	}
	st.Version = base + 1
	body, err := json.Marshal(st)
	if err != nil {
		return breaker.State{}, err
	}
	mode := st.Mode
	if mode == "" {
		mode = breaker.Closed
	}
	writer := rand.Text()
	in := &dynamodb.UpdateItemInput{
		TableName:        aws.String(s.table),
		Key:              map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: Key(pipeline, dependency)}},
		UpdateExpression: aws.String("SET breaker_version = :n, breaker_mode = :m, breaker_state = :s, breaker_writer = :w, updated_at = :u"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":n": &types.AttributeValueMemberN{Value: strconv.FormatInt(st.Version, 10)},
			":m": &types.AttributeValueMemberS{Value: string(mode)},
			":s": &types.AttributeValueMemberS{Value: string(body)},
			":w": &types.AttributeValueMemberS{Value: writer},
			":u": &types.AttributeValueMemberS{Value: time.Now().UTC().Format(time.RFC3339Nano)},
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	if base == 0 {
		in.ConditionExpression = aws.String("attribute_not_exists(pk)")
	} else {
		in.ConditionExpression = aws.String("breaker_version = :v")
		in.ExpressionAttributeValues[":v"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(base, 10)}
	}
	_, err = s.api.UpdateItem(ctx, in)
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		return s.settleConflict(ctx, pipeline, dependency, st, writer, ccf.Item)
	case err != nil:
		return breaker.State{}, fmt.Errorf("breaker %s/%s: put: %w", pipeline, dependency, err)
	}
	return st, nil
}

// settleConflict tells a write that lost its condition from one that was
// applied: the SDK retries an UpdateItem whose response was lost (a
// connection reset, a timeout), and the retry fails the condition the
// first attempt made false. Taken as a conflict, the breaker would apply
// its change again (a failure or a probe counted twice). item is the item
// as the condition found it (DynamoDB returns it; where an emulator does
// not, it is read): at st's version and with this write's writer, the
// write was applied.
func (s *Store) settleConflict(ctx context.Context, pipeline, dependency string, st breaker.State, writer string, item map[string]types.AttributeValue) (breaker.State, error) {
	if item == nil {
		out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: aws.String(s.table), ConsistentRead: aws.Bool(true),
			Key:                  map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: Key(pipeline, dependency)}},
			ProjectionExpression: aws.String("breaker_version, breaker_writer"),
		})
		if err != nil || out == nil {
			return breaker.State{}, breaker.ErrConflict // read again by the breaker, as any conflict
		}
		item = out.Item
	}
	v, _ := item["breaker_version"].(*types.AttributeValueMemberN)
	w, _ := item["breaker_writer"].(*types.AttributeValueMemberS)
	if v != nil && w != nil && v.Value == strconv.FormatInt(st.Version, 10) && w.Value == writer {
		return st, nil
	}
	return breaker.State{}, breaker.ErrConflict
}
