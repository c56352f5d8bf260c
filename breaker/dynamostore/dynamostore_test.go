package dynamostore_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

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
