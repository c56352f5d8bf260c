// Command lambda is the triage Lambda's entry: it reads the environment of
// docs/wiring.md, builds the clients and starts Handler, which runs on
// an EventBridge schedule and on DLQ alarms.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/agentdlq/agentdlq/internal/awscfg"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/triage/processed"
	"github.com/agentdlq/agentdlq/triage/store"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil)) // stdout carries the EMF metrics
	h, err := setup(log)
	if err != nil {
		log.Error("triage configuration", slog.String("error", err.Error()))
		os.Exit(1)
	}
	lambda.Start(h.Handle)
}

func setup(log *slog.Logger) (*Handler, error) {
	targets, err := ParseTargets([]byte(os.Getenv("AGENTDLQ_TRIAGE_TARGETS")))
	if err != nil {
		return nil, fmt.Errorf("AGENTDLQ_TRIAGE_TARGETS: %w", err)
	}
	cfg, err := awscfg.Load(context.Background()) // honours AWS_ENDPOINT_URL*
	if err != nil {
		return nil, err
	}
	h := &Handler{Targets: targets, SQS: sqs.NewFromConfig(cfg), SNS: sns.NewFromConfig(cfg), Metrics: os.Stdout, Region: cfg.Region, Logger: log,
		Next: nextCommands,
		// Every report states the SLO period's budget spent from the
		// worker's Processed metric (the role may cloudwatch:GetMetricData).
		Processed: processed.CloudWatch{API: cloudwatch.NewFromConfig(cfg), Logger: log}}
	if bucket := os.Getenv("AGENTDLQ_EVAL_BUCKET"); bucket != "" {
		h.Dest = &store.S3{API: s3.NewFromConfig(cfg), Bucket: bucket}
	}
	if table := os.Getenv("AGENTDLQ_LEDGER_TABLE"); table != "" {
		h.Ledger = ledger.NewDynamo(dynamodb.NewFromConfig(cfg), table)
	}
	return h, nil
}

// nextCommands are the alarm summary's last lines: what the pipeline's
// owner runs next. The Lambda is a face of triage, so it, not the library,
// spells the command lines.
func nextCommands(pipelineName string) []string {
	return []string{
		"agentdlq ui   (the console: groups, letters, gated redrive)",
		"agentdlq triage --pipeline " + pipelineName,
		"agentdlq redrive plan --pipeline " + pipelineName,
	}
}
