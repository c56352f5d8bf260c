// Command lambda is the worker's Lambda entry: it reads the environment of
// docs/wiring.md, builds the clients and starts the handler.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/agentdlq/agentdlq/functions/worker"
	"github.com/agentdlq/agentdlq/internal/ledger"
	"github.com/agentdlq/agentdlq/internal/topology"
	"github.com/agentdlq/agentdlq/pipeline"
)

// concurrency is how many records (message groups, for FIFO) an invocation
// handles at once: each waits on DynamoDB for its ledger entry.
const concurrency = 16

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	w, err := setup(log)
	if err != nil {
		log.Error("worker configuration", slog.String("error", err.Error()))
		os.Exit(1) // fail fast: nothing is acknowledged by a misconfigured worker
	}
	lambda.Start(w.Handle)
}

func setup(log *slog.Logger) (*worker.Worker, error) {
	var p pipeline.Pipeline
	if err := json.Unmarshal([]byte(os.Getenv("AGENTDLQ_PIPELINE_JSON")), &p); err != nil {
		return nil, fmt.Errorf("AGENTDLQ_PIPELINE_JSON: %w", err)
	}
	p.ApplyDefaults()
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("AGENTDLQ_PIPELINE_JSON: %w", err)
	}
	table := os.Getenv("AGENTDLQ_LEDGER_TABLE")
	if table == "" {
		return nil, fmt.Errorf("AGENTDLQ_LEDGER_TABLE is required")
	}
	cfg, err := config.LoadDefaultConfig(context.Background()) // honours AWS_ENDPOINT_URL*
	if err != nil {
		return nil, err
	}
	return worker.New(worker.Config{
		Pipeline: &p,
		Queues: topology.Queues{
			HotURL: os.Getenv("AGENTDLQ_HOT_QUEUE_URL"), HotARN: os.Getenv("AGENTDLQ_HOT_QUEUE_ARN"),
			DLQURL: os.Getenv("AGENTDLQ_DLQ_URL"), DLQARN: os.Getenv("AGENTDLQ_DLQ_ARN"), FIFO: p.FIFO,
		},
		SQS:           sqs.NewFromConfig(cfg),
		Ledger:        ledger.NewDynamo(dynamodb.NewFromConfig(cfg), table),
		WorkerVersion: os.Getenv("AGENTDLQ_WORKER_VERSION"),
		Concurrency:   concurrency,
		Logger:        log,
	})
}
