package main

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/agentdlq/agentdlq/infra/stack"
	"github.com/agentdlq/agentdlq/pipeline"
)

// OrdersProps configures the orders team's stack.
type OrdersProps struct {
	// WorkerAssetDir and TriageAssetDir are required: the directories holding
	// the worker's and the triage's arm64 bootstrap, which the go build
	// commands of docs/deploying.md write into dist/worker and dist/triage
	// of this module.
	WorkerAssetDir string
	TriageAssetDir string
	// RedrivePrincipal is required: the IAM role or user ARN of the team's
	// on-call, the one principal that may assume the pipeline's redrive role.
	RedrivePrincipal string
	// StackProps is optional.
	StackProps *awscdk.StackProps
}

// Orders is the team's stack: what it held before agentdlq, and agentdlq's parts.
type Orders struct {
	awscdk.Stack
	Table    awsdynamodb.Table
	Invoices awss3.Bucket
	AgentDLQ *stack.Parts
}

// agentTasks is the team's one agentdlq pipeline. The same definition could
// come from a pipelines.json (pipeline.Load), which the local runner reads too.
var agentTasks = pipeline.Pipeline{
	Name:            "orders-agent-tasks",
	Owner:           "orders-team",
	Description:     "Tool calls that the orders agent queues.",
	MaxReceiveCount: 4,
}

// NewOrders creates the orders team's stack: its own table and invoice
// bucket, and one agentdlq pipeline added with one call.
func NewOrders(scope constructs.Construct, id string, props *OrdersProps) (*Orders, error) {
	s := &Orders{Stack: awscdk.NewStack(scope, jsii.String(id), props.StackProps)}

	// What the team's stack held already.
	s.Table = awsdynamodb.NewTable(s.Stack, jsii.String("Orders"), &awsdynamodb.TableProps{
		PartitionKey: &awsdynamodb.Attribute{Name: jsii.String("order_id"), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:  awsdynamodb.BillingMode_PAY_PER_REQUEST,
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		Encryption: awsdynamodb.TableEncryption_AWS_MANAGED,
	})
	logs := awss3.NewBucket(s.Stack, jsii.String("AccessLogs"), &awss3.BucketProps{
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		EnforceSSL:        jsii.Bool(true),
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		ObjectOwnership:   awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
	})
	s.Invoices = awss3.NewBucket(s.Stack, jsii.String("Invoices"), &awss3.BucketProps{
		BlockPublicAccess:      awss3.BlockPublicAccess_BLOCK_ALL(),
		EnforceSSL:             jsii.Bool(true),
		Encryption:             awss3.BucketEncryption_S3_MANAGED,
		ObjectOwnership:        awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		Versioned:              jsii.Bool(true),
		ServerAccessLogsBucket: logs,
		ServerAccessLogsPrefix: jsii.String("invoices/"),
	})

	// agentdlq: one call, one Props struct. Bad props come back as an error.
	parts, err := stack.Add(s.Stack, "AgentDLQ", &stack.Props{
		Pipelines:         []pipeline.Pipeline{agentTasks},
		WorkerAssetDir:    props.WorkerAssetDir,
		TriageAssetDir:    props.TriageAssetDir,
		RedrivePrincipals: map[string]string{agentTasks.Name: props.RedrivePrincipal},
	})
	if err != nil {
		return nil, fmt.Errorf("orders stack: %w", err)
	}
	s.AgentDLQ = parts
	return s, nil
}
