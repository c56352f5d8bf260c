// Command lambda is the worker's Lambda entry: it reads the environment of
// docs/wiring.md, builds the clients and starts the handler.
package main

import (
	"errors"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/agentdlq/agentdlq/breaker/dynamostore"
	"github.com/agentdlq/agentdlq/functions/batch"
	"github.com/agentdlq/agentdlq/functions/sampleworker"
	"github.com/agentdlq/agentdlq/internal/lambdaenv"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/pipeline"
)

func main() {
	log := slog.New(batch.NewLogHandler(os.Stdout, nil))
	if limit, ok := lambdaenv.MemoryLimit(os.Getenv); ok { // GOMEMLIMIT unset: 90% of the function's memory
		debug.SetMemoryLimit(limit)
	}
	if n, ok := lambdaenv.MaxProcs(os.Getenv); ok { // GOMAXPROCS unset: the vCPUs the memory pays for
		runtime.GOMAXPROCS(n)
	}
	w, err := setup(log)
	if err != nil { // fail fast: a misconfigured worker acknowledges nothing
		log.Error("worker configuration", slog.String("error", err.Error()))
		os.Exit(1)
	}
	// The lean path: w is a lambda.Handler, handed the invocation's payload
	// (the runtime's buffer, reset and reused after the response is sent)
	// and decoding it once, bodies in place, with no events.SQSEvent.
	lambda.Start(w)
}

func setup(log *slog.Logger) (*sampleworker.Worker, error) {
	p, err := sampleworker.ParsePipeline([]byte(os.Getenv("AGENTDLQ_PIPELINE_JSON")))
	if err != nil {
		return nil, err
	}
	table := os.Getenv("AGENTDLQ_LEDGER_TABLE")
	if table == "" {
		return nil, errors.New("AGENTDLQ_LEDGER_TABLE is required")
	}
	// The runtime's environment, not LoadDefaultConfig: same credentials and
	// AWS_ENDPOINT_URL*, 2 MB less bootstrap (internal/lambdaenv).
	cfg, err := lambdaenv.Load(os.Getenv)
	if err != nil {
		return nil, err
	}
	// The DLQ's size as the construct states it (pipeline.EnvDLQMaxMessageBytes).
	dlqMax, err := p.WorkerDLQMaxMessageBytes(os.Getenv)
	if err != nil {
		return nil, err
	}
	var evidence batch.S3API
	bucket := os.Getenv("AGENTDLQ_EVIDENCE_BUCKET") // optional: claim checks of oversized dead letters
	if bucket != "" {
		evidence = s3.NewFromConfig(cfg, func(o *s3.Options) { o.BaseEndpoint = lambdaenv.Endpoint(os.Getenv, "S3") })
	}
	ddb := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = lambdaenv.Endpoint(os.Getenv, "DynamoDB") })
	return sampleworker.New(sampleworker.Config{
		Evidence: evidence, EvidenceBucket: bucket, DLQMaxMessageBytes: dlqMax,
		Pipeline: p,
		Queues: pipeline.Queues{HotURL: os.Getenv("AGENTDLQ_HOT_QUEUE_URL"), HotARN: os.Getenv("AGENTDLQ_HOT_QUEUE_ARN"),
			DLQURL: os.Getenv("AGENTDLQ_DLQ_URL"), DLQARN: os.Getenv("AGENTDLQ_DLQ_ARN"), FIFO: p.FIFO},
		SQS:           sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.BaseEndpoint = lambdaenv.Endpoint(os.Getenv, "SQS") }),
		Ledger:        ledger.NewDynamo(ddb, table),
		BreakerStore:  dynamostore.New(ddb, table), // read only when the pipeline's breaker is on
		WorkerVersion: os.Getenv("AGENTDLQ_WORKER_VERSION"),
		Concurrency:   sampleworker.LambdaConcurrency,
		Logger:        log,
	})
}
