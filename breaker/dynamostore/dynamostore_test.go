package dynamostore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
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

// lossyClient passes every request to the emulator and, for the first
// drop UpdateItem calls that write a breaker state, throws the response
// away and reports a connection reset, as a network that breaks after the
// request reached DynamoDB: the SDK sends the same UpdateItem again.
type lossyClient struct {
	base    aws.HTTPClient
	mu      sync.Mutex
	drop    int
	dropped int
}

func (c *lossyClient) Do(req *http.Request) (*http.Response, error) {
	lose := false
	if req.Header.Get("X-Amz-Target") == "DynamoDB_20120810.UpdateItem" && req.Body != nil {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		c.mu.Lock()
		if bytes.Contains(body, []byte("breaker_writer")) && c.dropped < c.drop {
			c.dropped++
			lose = true
		}
		c.mu.Unlock()
	}
	resp, err := c.base.Do(req)
	if err != nil || !lose {
		return resp, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return nil, errors.New("read tcp 127.0.0.1: connection reset by peer")
}

// TestLostResponseIsNotAConflict: when an UpdateItem was applied but its
// response was lost, the SDK's retry fails the condition the first attempt
// made false. The store must take that as the write it was, not as a
// conflict the breaker would answer by applying its change again (a
// failure or a probe counted twice). A real conflict stays one. On the
// emulator, through the SDK's own retry.
func TestLostResponseIsNotAConflict(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := localtest.AWS(t)
	table := localtest.Table(t, cfg)
	lossy := &lossyClient{base: cfg.HTTPClient, drop: 2}
	lcfg := cfg.Copy()
	lcfg.HTTPClient = lossy
	s := dynamostore.New(dynamodb.NewFromConfig(lcfg), table)

	st, err := s.Put(ctx, "agent-tasks", "search-api", breaker.State{Failures: 1})
	if err != nil || st.Version != 1 {
		t.Fatalf("first write, its response lost: %+v, %v; want version 1", st, err)
	}
	st.Failures = 2
	st, err = s.Put(ctx, "agent-tasks", "search-api", st)
	if err != nil || st.Version != 2 {
		t.Fatalf("second write, its response lost: %+v, %v; want version 2", st, err)
	}
	if lossy.dropped != 2 {
		t.Fatalf("%d responses lost, want 2: the test did not exercise the retry", lossy.dropped)
	}
	got, err := s.Get(ctx, "agent-tasks", "search-api")
	if err != nil || got.Version != 2 || got.Failures != 2 {
		t.Fatalf("stored %+v, %v; want version 2 with 2 failures", got, err)
	}
	// Another writer's change since: a conflict, as before.
	other := dynamostore.New(dynamodb.NewFromConfig(cfg), table)
	if _, err := other.Put(ctx, "agent-tasks", "search-api", breaker.State{Version: 1, Failures: 9}); !errors.Is(err, breaker.ErrConflict) {
		t.Fatalf("a stale write: %v, want breaker.ErrConflict", err)
	}
	if _, err := other.Put(ctx, "agent-tasks", "search-api", breaker.State{Failures: 9}); !errors.Is(err, breaker.ErrConflict) {
		t.Fatalf("a second first write: %v, want breaker.ErrConflict", err)
	}
}

// conflictAPI fails every state write's condition, returning the item as
// DynamoDB does with ReturnValuesOnConditionCheckFailure ALL_OLD: at
// version and by writer ("" for the writer of the request itself).
type conflictAPI struct {
	dynamostore.API
	version, writer string
}

func (f *conflictAPI) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	w, ok := in.ExpressionAttributeValues[":w"].(*types.AttributeValueMemberS)
	if !ok {
		return &dynamodb.UpdateItemOutput{}, nil // the index
	}
	if in.ReturnValuesOnConditionCheckFailure != types.ReturnValuesOnConditionCheckFailureAllOld {
		return nil, errors.New("the write asks for no item on a failed condition")
	}
	writer := f.writer
	if writer == "" {
		writer = w.Value
	}
	return nil, &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed"), Item: map[string]types.AttributeValue{
		"breaker_version": &types.AttributeValueMemberN{Value: f.version},
		"breaker_writer":  &types.AttributeValueMemberS{Value: writer},
	}}
}

// TestConflictItemSettles: where DynamoDB returns the item with the failed
// condition, the store reads no more: this write's version and writer are
// the write applied; anything else is a conflict.
func TestConflictItemSettles(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name, version, writer string
		conflict              bool
	}{
		{"applied: this write's version and writer", "4", "", false},
		{"another writer at the same version", "4", "someone-else", true},
		{"moved on since", "5", "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := dynamostore.New(&conflictAPI{version: c.version, writer: c.writer}, "t")
			st, err := s.Put(ctx, "agent-tasks", "search-api", breaker.State{Version: 3})
			if got := errors.Is(err, breaker.ErrConflict); got != c.conflict || (!c.conflict && (err != nil || st.Version != 4)) {
				t.Fatalf("Put = %+v, %v; want conflict %v", st, err, c.conflict)
			}
		})
	}
}
