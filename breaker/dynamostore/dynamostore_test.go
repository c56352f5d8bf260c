package dynamostore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentdlq/agentdlq/breaker"
	"github.com/agentdlq/agentdlq/breaker/breakertest"
	"github.com/agentdlq/agentdlq/breaker/dynamostore"
	"github.com/agentdlq/agentdlq/testkit/localtest"
)

var _ dynamostore.API = (*dynamodb.Client)(nil)

// TestDynamoConformance runs the store suite on the DynamoDB emulator, on a
// ledger table (the table the worker shares its breakers in).
func TestDynamoConformance(t *testing.T) {
	t.Parallel()
	cfg := localtest.AWS(t)
	s := dynamostore.New(dynamodb.NewFromConfig(cfg), localtest.Table(t, cfg))
	breakertest.Run(t, func(*testing.T) breaker.Store { return s })
}

// fakeAPI records the pks of the UpdateItem calls and fails those on failPK.
type fakeAPI struct {
	dynamostore.API
	updates []string
	failPK  string
}

func (f *fakeAPI) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	pk := in.Key["pk"].(*types.AttributeValueMemberS).Value
	f.updates = append(f.updates, pk)
	if pk == f.failPK {
		return nil, errors.New("throttled")
	}
	return &dynamodb.UpdateItemOutput{}, nil
}

// TestFirstPutListsBeforeItStores: the index is written before a
// dependency's first state, and a failed index write stores no state, so
// that every stored state is listed; later writes do not touch the index.
func TestFirstPutListsBeforeItStores(t *testing.T) {
	ctx := context.Background()
	idx, key := dynamostore.IndexKey("agent-tasks"), dynamostore.Key("agent-tasks", "search-api")
	f := &fakeAPI{}
	s := dynamostore.New(f, "t")
	if _, err := s.Put(ctx, "agent-tasks", "search-api", breaker.State{Failures: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "agent-tasks", "search-api", breaker.State{Version: 1, Failures: 2}); err != nil {
		t.Fatal(err)
	}
	if want := []string{idx, key, key}; fmt.Sprint(f.updates) != fmt.Sprint(want) {
		t.Fatalf("UpdateItem on %q, want %q", f.updates, want)
	}
	f = &fakeAPI{failPK: idx}
	if _, err := dynamostore.New(f, "t").Put(ctx, "agent-tasks", "search-api", breaker.State{Failures: 1}); err == nil || len(f.updates) != 1 {
		t.Fatalf("index write failed: Put = %v after %q, want an error and no state written", err, f.updates)
	}
	if _, err := s.Put(ctx, "agent-tasks", "", breaker.State{}); !errors.Is(err, dynamostore.ErrEmptyDependency) {
		t.Fatalf("empty dependency: %v", err)
	}
	// No breaker state's pk is an index's: a pipeline named like an index is apart.
	if dynamostore.IndexKey("7") == dynamostore.Key("dependencies", "7") || !strings.HasPrefix(idx, dynamostore.KeyPrefix) {
		t.Fatal("the index key collides or leaves KeyPrefix")
	}
}

// TestStateStoredBeforeTheIndexIsListed: a state stored before the index
// item existed (its first Put was made by a Store that kept no index) is
// listed by the first write a Store makes of it; later writes of the same
// Store do not touch the index again.
func TestStateStoredBeforeTheIndexIsListed(t *testing.T) {
	ctx := context.Background()
	idx, key := dynamostore.IndexKey("agent-tasks"), dynamostore.Key("agent-tasks", "search-api")
	f := &fakeAPI{}
	s := dynamostore.New(f, "t")
	for v := int64(3); v < 5; v++ {
		if _, err := s.Put(ctx, "agent-tasks", "search-api", breaker.State{Version: v, Mode: breaker.Open}); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{idx, key, key}; fmt.Sprint(f.updates) != fmt.Sprint(want) {
		t.Fatalf("UpdateItem on %q, want %q", f.updates, want)
	}
	// The index write failing then does not lose the state's write: it is
	// tried again with the next one.
	f = &fakeAPI{failPK: idx}
	s = dynamostore.New(f, "t")
	for v := int64(3); v < 5; v++ {
		if _, err := s.Put(ctx, "agent-tasks", "search-api", breaker.State{Version: v}); err != nil {
			t.Fatalf("Put of version %d: %v", v, err)
		}
	}
	if want := []string{idx, key, idx, key}; fmt.Sprint(f.updates) != fmt.Sprint(want) {
		t.Fatalf("UpdateItem on %q, want %q", f.updates, want)
	}
}

// TestIndexBounded: a producer that names dependencies (the sample worker
// takes them from the task) cannot grow a pipeline's index item towards
// DynamoDB's 400 KB: past MaxDependencies a new dependency is refused and
// no state is stored for it; the listed ones keep being written, and a
// name over MaxDependencyBytes is refused before any call. On the
// emulator, whose condition expressions are DynamoDB's.
func TestIndexBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := localtest.AWS(t)
	api, table := dynamodb.NewFromConfig(cfg), localtest.Table(t, cfg)
	s := dynamostore.New(api, table)
	for i := range dynamostore.MaxDependencies {
		if _, err := s.Put(ctx, "agent-tasks", fmt.Sprintf("dep-%03d", i), breaker.State{Failures: 1}); err != nil {
			t.Fatalf("dependency %d of %d: %v", i+1, dynamostore.MaxDependencies, err)
		}
	}
	_, err := s.Put(ctx, "agent-tasks", "one-too-many", breaker.State{Failures: 1})
	if !errors.Is(err, dynamostore.ErrTooManyDependencies) {
		t.Fatalf("dependency %d: %v, want ErrTooManyDependencies", dynamostore.MaxDependencies+1, err)
	}
	if st, err := s.Get(ctx, "agent-tasks", "one-too-many"); err != nil || st.Version != 0 {
		t.Fatalf("the refused dependency's state: %+v, %v; want none stored", st, err)
	}
	// Another worker's Store, which lost the race to store dep-000 first:
	// the name is in the index, so a full index lets it through, and the
	// state's own condition says who won.
	if _, err := dynamostore.New(api, table).Put(ctx, "agent-tasks", "dep-000", breaker.State{Failures: 2}); !errors.Is(err, breaker.ErrConflict) {
		t.Fatalf("a listed dependency's first write on a full index: %v, want breaker.ErrConflict", err)
	}
	if _, err := dynamostore.New(api, table).Put(ctx, "agent-tasks", "dep-000", breaker.State{Version: 1, Failures: 2}); err != nil {
		t.Fatalf("a listed dependency of a full index: %v", err)
	}
	deps, err := s.Dependencies(ctx, "agent-tasks")
	if err != nil || len(deps) != dynamostore.MaxDependencies || slices.Contains(deps, "one-too-many") {
		t.Fatalf("listed %d dependencies (%v), want %d without the refused one", len(deps), err, dynamostore.MaxDependencies)
	}
	// Another pipeline's index is its own.
	if _, err := s.Put(ctx, "agent-steps", "one-too-many", breaker.State{Failures: 1}); err != nil {
		t.Fatalf("another pipeline: %v", err)
	}
	if _, err := s.Put(ctx, "agent-tasks", strings.Repeat("a", dynamostore.MaxDependencyBytes+1), breaker.State{}); !errors.Is(err, dynamostore.ErrDependencyTooLong) {
		t.Fatalf("a long name: %v, want ErrDependencyTooLong", err)
	}
}
