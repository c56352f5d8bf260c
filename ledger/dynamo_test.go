package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/ledger/ledgertest"
	"github.com/agentdlq/agentdlq/testkit/localtest"
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

// TestDynamoConformance runs the ledger suite on the DynamoDB emulator,
// every subtest on one table.
func TestDynamoConformance(t *testing.T) {
	t.Parallel()
	d, _, _ := newDynamo(t)
	ledgertest.Run(t, func(*testing.T) ledger.Ledger { return d })
}

// TestDynamoItem: the item's attributes as the table holds them, TTL in
// epoch seconds DefaultTTL after the last update.
func TestDynamoItem(t *testing.T) {
	t.Parallel()
	d, client, table := newDynamo(t)
	ctx := context.Background()
	_, err := d.Begin(ctx, "k", "m1", "", t0, time.Minute)
	require.NoError(t, err)
	require.NoError(t, d.StartEffect(ctx, "k", "m1", t0))
	require.NoError(t, d.Complete(ctx, "k", "m1", "sha256:abc", t0.Add(4*time.Minute)))

	out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "k"}}})
	require.NoError(t, err)
	want := map[string]types.AttributeValue{
		"pk":             &types.AttributeValueMemberS{Value: "k"},
		"state":          &types.AttributeValueMemberS{Value: "done"},
		"owner":          &types.AttributeValueMemberS{Value: "m1"},
		"effect_started": &types.AttributeValueMemberBOOL{Value: true},
		"receipt":        &types.AttributeValueMemberS{Value: "sha256:abc"},
		"updated_at":     &types.AttributeValueMemberS{Value: "2026-11-29T12:04:00.000000000Z"},
		"expires_at":     &types.AttributeValueMemberN{Value: fmt.Sprint(t0.Add(4 * time.Minute).Add(ledger.DefaultTTL).Unix())},
	}
	assert.Equal(t, want, out.Item)
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
			_, errBegin := d.Begin(ctx, "k", "m", "", t0, time.Minute)
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
