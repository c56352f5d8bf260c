package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/internal/localtest"
	"github.com/agentdlq/agentdlq/ledger"
)

var _ ledger.DynamoAPI = (*dynamodb.Client)(nil)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func newDynamo(t *testing.T) (*ledger.Dynamo, *dynamodb.Client, string) {
	t.Helper()
	cfg := localtest.AWS(t)
	table := localtest.Table(t, cfg)
	client := dynamodb.NewFromConfig(cfg)
	return ledger.NewDynamo(client, table), client, table
}

func TestDynamoLifecycle(t *testing.T) {
	t.Parallel()
	d, client, table := newDynamo(t)
	ctx := context.Background()
	const lease = time.Minute

	// A new key: claimed, nothing before.
	prev, err := d.Begin(ctx, "k", "m1", t0, lease)
	require.NoError(t, err)
	assert.Equal(t, ledger.Entry{}, prev)

	// Another delivery while the lease holds: leased.
	_, err = d.Begin(ctx, "k", "m2", t0.Add(time.Second), lease)
	require.ErrorIs(t, err, ledger.ErrLeased)
	// The same delivery again (a redelivery of the same message): claimed.
	prev, err = d.Begin(ctx, "k", "m1", t0.Add(2*time.Second), lease)
	require.NoError(t, err)
	assert.Equal(t, ledger.StateInProgress, prev.State)
	assert.Equal(t, "m1", prev.Owner)
	assert.Equal(t, t0.Add(lease), prev.LeaseUntil)
	// After the lease: another delivery takes it over.
	prev, err = d.Begin(ctx, "k", "m2", t0.Add(2*time.Second+lease+time.Millisecond), lease)
	require.NoError(t, err)
	assert.Equal(t, "m1", prev.Owner)

	// m1 lost the lease: it may not start an effect; m2 may.
	require.ErrorIs(t, d.StartEffect(ctx, "k", "m1", t0.Add(3*time.Minute)), ledger.ErrLeased)
	require.NoError(t, d.StartEffect(ctx, "k", "m2", t0.Add(3*time.Minute)))
	e, ok, err := d.Get(ctx, "k")
	require.NoError(t, err)
	require.True(t, ok)
	assert.True(t, e.EffectStarted)

	// Done with a receipt; a later Begin is ErrDone and returns the receipt.
	require.NoError(t, d.Complete(ctx, "k", "m2", "sha256:abc", t0.Add(4*time.Minute)))
	e, err = d.Begin(ctx, "k", "m3", t0.Add(5*time.Minute), lease)
	require.ErrorIs(t, err, ledger.ErrDone)
	assert.Equal(t, ledger.StateDone, e.State)
	assert.Equal(t, "sha256:abc", e.Receipt)
	assert.True(t, e.LeaseUntil.IsZero(), "done removes the lease")

	// TTL: expires_at is epoch seconds DefaultTTL after the last update.
	out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "k"}}})
	require.NoError(t, err)
	exp, ok := out.Item["expires_at"].(*types.AttributeValueMemberN)
	require.True(t, ok, "expires_at is a number")
	assert.Equal(t, fmt.Sprint(t0.Add(4*time.Minute).Add(ledger.DefaultTTL).Unix()), exp.Value)

	// Unknown keys.
	_, ok, err = d.Get(ctx, "nope")
	require.NoError(t, err)
	assert.False(t, ok)
}

func TestDynamoDeadLetterAndRedriveCounts(t *testing.T) {
	t.Parallel()
	d, _, _ := newDynamo(t)
	ctx := context.Background()
	_, err := d.Begin(ctx, "k", "m1", t0, time.Minute)
	require.NoError(t, err)

	e, err := d.DeadLettered(ctx, "k", deadletter.ReasonSchemaInvalid, t0)
	require.NoError(t, err)
	assert.Equal(t, ledger.StateDeadLettered, e.State)
	assert.Equal(t, 1, e.DeadLetterCount)
	assert.Equal(t, deadletter.ReasonSchemaInvalid, e.LastReason)
	assert.True(t, e.LeaseUntil.IsZero())

	e, err = d.Redriven(ctx, "k", t0.Add(time.Hour))
	require.NoError(t, err)
	assert.Equal(t, 1, e.RedriveCount)
	assert.Equal(t, 1, e.DeadLetterCount)

	// A dead-lettered key may be claimed again (that is a redrive), by anyone.
	prev, err := d.Begin(ctx, "k", "m9", t0.Add(2*time.Hour), time.Minute)
	require.NoError(t, err)
	assert.Equal(t, ledger.StateDeadLettered, prev.State)
	assert.Equal(t, 1, prev.RedriveCount)

	e, err = d.DeadLettered(ctx, "k", deadletter.ReasonRedriveLoop, t0.Add(3*time.Hour))
	require.NoError(t, err)
	assert.Equal(t, 2, e.DeadLetterCount)
	assert.Equal(t, deadletter.ReasonRedriveLoop, e.LastReason)

	// Counts of a key never begun start from nothing (ADD creates them).
	e, err = d.Redriven(ctx, "fresh", t0)
	require.NoError(t, err)
	assert.Equal(t, 1, e.RedriveCount)
	assert.Equal(t, 0, e.DeadLetterCount)
}

func TestDynamoRelease(t *testing.T) {
	t.Parallel()
	d, _, _ := newDynamo(t)
	ctx := context.Background()
	_, err := d.Begin(ctx, "k", "m1", t0, time.Hour)
	require.NoError(t, err)
	require.NoError(t, d.Release(ctx, "k", "m2", t0), "releasing a lease one does not hold does nothing")
	_, err = d.Begin(ctx, "k", "m2", t0, time.Hour)
	require.ErrorIs(t, err, ledger.ErrLeased)
	require.NoError(t, d.Release(ctx, "k", "m1", t0))
	_, err = d.Begin(ctx, "k", "m2", t0.Add(time.Second), time.Hour)
	require.NoError(t, err, "a released key can be claimed at once")
}

// TestDynamoBeginRace: concurrent deliveries of one key; exactly one wins.
func TestDynamoBeginRace(t *testing.T) {
	t.Parallel()
	d, _, _ := newDynamo(t)
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = d.Begin(context.Background(), "race", fmt.Sprint("m", i), t0, time.Minute)
		}()
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
			continue
		}
		assert.ErrorIs(t, err, ledger.ErrLeased)
	}
	assert.Equal(t, 1, won, "exactly one delivery holds the lease")
}

// failingDynamo fails every call with err.
type failingDynamo struct{ err error }

var _ ledger.DynamoAPI = (*failingDynamo)(nil)

func (f *failingDynamo) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return nil, f.err
}

func (f *failingDynamo) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return nil, f.err
}

func TestDynamoUnavailable(t *testing.T) {
	t.Parallel()
	op := func(err error) error {
		return &smithy.OperationError{ServiceID: "DynamoDB", OperationName: "UpdateItem", Err: err}
	}
	tests := []struct {
		name            string
		err             error
		wantUnavailable bool // a ledger outage: the worker retries
	}{
		{name: "throughput exceeded", err: op(&types.ProvisionedThroughputExceededException{Message: aws.String("slow down")}), wantUnavailable: true},
		{name: "throttling", err: op(&smithy.GenericAPIError{Code: "ThrottlingException", Fault: smithy.FaultClient}), wantUnavailable: true},
		{name: "server fault", err: op(&types.InternalServerError{Message: aws.String("oops")}), wantUnavailable: true},
		{name: "network", err: op(&net.OpError{Op: "dial", Err: errors.New("connection refused")}), wantUnavailable: true},
		{name: "deadline", err: op(context.DeadlineExceeded), wantUnavailable: true},
		{name: "missing table", err: op(&types.ResourceNotFoundException{Message: aws.String("no table")}), wantUnavailable: false},
		{name: "access denied", err: op(&smithy.GenericAPIError{Code: "AccessDeniedException", Fault: smithy.FaultClient}), wantUnavailable: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := ledger.NewDynamo(&failingDynamo{err: tt.err}, "t")
			ctx := context.Background()
			_, errBegin := d.Begin(ctx, "k", "m", t0, time.Minute)
			_, _, errGet := d.Get(ctx, "k")
			_, errDL := d.DeadLettered(ctx, "k", deadletter.ReasonPolicyLimit, t0)
			for _, err := range []error{errBegin, errGet, errDL, d.Complete(ctx, "k", "m", "r", t0)} {
				require.Error(t, err)
				assert.Equal(t, tt.wantUnavailable, errors.Is(err, ledger.ErrUnavailable), "%v", err)
				assert.ErrorIs(t, err, tt.err, "the cause is kept")
				assert.NotErrorIs(t, err, ledger.ErrDone)
				assert.NotErrorIs(t, err, ledger.ErrLeased)
			}
		})
	}
}
