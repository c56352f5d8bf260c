package capacity

import "math"

// Prices are the public on-demand prices the cost figures use. Every
// figure names its source (Sources, by field) and the day it was read
// (Date); a team with other prices (another Region, a Savings Plan, the
// free tier) passes its own.
type Prices struct {
	Date   string `json:"date"`
	Region string `json:"region"`
	Arch   string `json:"arch"`
	// SQS: a request of up to 64 KiB of payload; every further 64 KiB
	// chunk is billed as one more.
	SQSStandardPerMillion float64 `json:"sqs_standard_per_million_requests"`
	SQSFIFOPerMillion     float64 `json:"sqs_fifo_per_million_requests"`
	// Lambda (arm64): requests and duration (GB-seconds, billed per ms).
	LambdaPerMillionRequests float64 `json:"lambda_per_million_requests"`
	LambdaPerGBSecond        float64 `json:"lambda_per_gb_second"`
	// DynamoDB on-demand: a write request unit writes up to 1 KB; a read
	// request unit reads up to 4 KB strongly consistent.
	DynamoDBPerMillionWRU float64 `json:"dynamodb_per_million_wru"`
	DynamoDBPerMillionRRU float64 `json:"dynamodb_per_million_rru"`
	// DynamoDBPerGBMonth is table storage (Standard table class).
	DynamoDBPerGBMonth float64 `json:"dynamodb_per_gb_month"`
	// S3 Standard: PUT (and COPY, POST, LIST) requests.
	S3PerThousandPuts float64 `json:"s3_per_thousand_puts"`
	// CloudWatch Logs: ingestion (Standard log class).
	LogsPerGBIngested float64 `json:"logs_per_gb_ingested"`
	// Sources maps a field's JSON name to the page it was read from.
	Sources map[string]string `json:"sources"`
}

// USEast1 are the prices of us-east-1 for arm64, read on 2026-12-07 (see
// docs/performance.md, "Price table", for how each was checked).
var USEast1 = Prices{
	Date: "2026-12-07", Region: "us-east-1", Arch: "arm64",
	SQSStandardPerMillion: 0.40, SQSFIFOPerMillion: 0.50,
	LambdaPerMillionRequests: 0.20, LambdaPerGBSecond: 0.0000133334,
	DynamoDBPerMillionWRU: 0.625, DynamoDBPerMillionRRU: 0.125, DynamoDBPerGBMonth: 0.25,
	S3PerThousandPuts: 0.005,
	LogsPerGBIngested: 0.50,
	Sources: map[string]string{
		"sqs":      "https://aws.amazon.com/sqs/pricing/",
		"lambda":   "https://aws.amazon.com/lambda/pricing/",
		"dynamodb": "https://aws.amazon.com/dynamodb/pricing/on-demand/",
		"s3":       "https://aws.amazon.com/s3/pricing/",
		"logs":     "https://aws.amazon.com/cloudwatch/pricing/",
	},
}

// PerTask is what one task costs the drain in requests and time: measured
// by the load bench (`agentdlq local bench --mix`), or predicted by Plan.
// Every figure is per task sent.
type PerTask struct {
	// SQSRequests are the billed SQS requests of the drain: the event
	// source mapping's receives (that returned messages) and deletes, the
	// worker's visibility changes and dead-letter sends (each 64 KiB chunk
	// of payload one more).
	SQSRequests float64 `json:"sqs_requests"`
	// WriteUnits and ReadUnits are the ledger's DynamoDB request units.
	WriteUnits float64 `json:"ledger_write_units"`
	ReadUnits  float64 `json:"ledger_read_units"`
	// S3Puts are the evidence objects of oversized dead letters.
	S3Puts float64 `json:"s3_puts"`
	// LogBytes are the worker's log and metric (EMF) lines, ingested by
	// CloudWatch Logs.
	LogBytes float64 `json:"log_bytes"`
	// Invocations are the worker's invocations; BilledMsPerInvocation the
	// duration each is billed (1 ms granularity).
	Invocations           float64 `json:"invocations"`
	BilledMsPerInvocation float64 `json:"billed_ms_per_invocation"`
	// The figures capacity scales: the ledger's calls (a call's latency
	// each, in sequence), the deliveries (handler receives; above 1 a task
	// is retried), the dead letters, and the worker's own SQS requests
	// (dead-letter sends, visibility changes: SQSRequests without the
	// mapping's receives and deletes).
	LedgerCalls       float64 `json:"ledger_calls"`
	Deliveries        float64 `json:"deliveries"`
	DeadLetters       float64 `json:"dead_letters"`
	WorkerSQSRequests float64 `json:"worker_sqs_requests"`
}

// Cost is dollars per million tasks, by service.
type Cost struct {
	SQS            float64 `json:"sqs"`
	DynamoDB       float64 `json:"dynamodb"`
	S3             float64 `json:"s3"`
	LambdaRequests float64 `json:"lambda_requests"`
	LambdaDuration float64 `json:"lambda_duration"`
	Logs           float64 `json:"logs"`
	Total          float64 `json:"total"`
	// GBSeconds are the billed GB-seconds per million tasks.
	GBSeconds float64 `json:"gb_seconds"`
}

// PerMillion prices a million tasks of pt with a worker of memoryMB on a
// standard (fifo false) or FIFO queue.
func (p Prices) PerMillion(pt PerTask, memoryMB int, fifo bool) Cost {
	const m = 1e6
	sqsPrice := p.SQSStandardPerMillion
	if fifo {
		sqsPrice = p.SQSFIFOPerMillion
	}
	c := Cost{
		SQS:            pt.SQSRequests * sqsPrice,
		DynamoDB:       pt.WriteUnits*p.DynamoDBPerMillionWRU + pt.ReadUnits*p.DynamoDBPerMillionRRU,
		S3:             pt.S3Puts * m / 1000 * p.S3PerThousandPuts,
		LambdaRequests: pt.Invocations * p.LambdaPerMillionRequests,
		Logs:           pt.LogBytes * m / 1e9 * p.LogsPerGBIngested,
	}
	c.GBSeconds = pt.Invocations * m * math.Ceil(pt.BilledMsPerInvocation) / 1000 * float64(memoryMB) / 1024
	c.LambdaDuration = c.GBSeconds * p.LambdaPerGBSecond
	c.Total = c.SQS + c.DynamoDB + c.S3 + c.LambdaRequests + c.LambdaDuration + c.Logs
	return c
}
