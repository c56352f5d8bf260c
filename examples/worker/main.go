// Command worker is a platform team's agentdlq worker in one page: the
// team's own tools behind the agent task v1 contract, the DynamoDB
// idempotency ledger, and the Lambda entry. It reads the environment that
// agentdlq's CDK constructs give a worker (docs/wiring.md) plus TOOLS_URL.
//
//	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -tags lambda.norpc -trimpath -ldflags='-s -w' -o dist/worker/bootstrap .
//
// The bootstrap stays under the 10 MB budget of docs/deploying.md because it
// takes its AWS configuration from the Lambda environment (awsConfig), not
// from config.LoadDefaultConfig.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/agentdlq/agentdlq/events/agenttask"
	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/functions/batch"
	"github.com/agentdlq/agentdlq/functions/batch/batchpipeline"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/sdkhttp"
)

// catalog is the team's tools; a refund changes the outside world.
var catalog = agenttask.Catalog{
	"crm.lookup":      {Name: "crm.lookup", Versions: "1"},
	"payments.refund": {Name: "payments.refund", Versions: "2", Mutates: true},
}

// Tools calls the team's tool API and returns the effect's receipt.
type Tools interface {
	Call(ctx context.Context, tool, idempotencyKey string, args json.RawMessage) (receipt string, err error)
}

// handler decodes the task, claims its key, calls the tool once.
func handler(tools Tools) batch.Handler {
	return func(ctx context.Context, r batch.Record) error {
		task, err := agenttask.DecodeTask(r.Body(), catalog)
		if err != nil {
			return err // poison: dead-lettered at once with its reason
		}
		r.Describe(&task) // dead letters and logs carry the task's ids
		tool := catalog[task.Tool]
		digest, err := agenttask.ArgsDigest(task.Args) // RFC 8785, then SHA-256
		if err != nil {
			return err // unreachable: DecodeTask checked that args is JSON
		}
		if err := r.Begin(ctx, task.Tenant, task.IdempotencyKey, digest, tool.Mutates); err != nil {
			return err // done (a no-op), the key reused with other args, leased elsewhere, ledger down
		}
		if tool.Mutates {
			if err := r.StartEffect(ctx); err != nil {
				return err // from here on a failure is effect_unknown
			}
		}
		receipt, err := tools.Call(ctx, task.Tool, task.IdempotencyKey, task.Args)
		if se, ok := errors.AsType[*StatusError](err); ok && se.RetryAfter > 0 {
			return batch.Transient(err).After(se.RetryAfter) // the provider said when
		}
		if err != nil {
			return err // classify, then the built-in rules, decide
		}
		r.SetReceipt(receipt)
		return nil
	}
}

// StatusError is a tool API answer other than 2xx, with its Retry-After.
type StatusError struct {
	Code       int
	RetryAfter time.Duration // 0 without the header
}

func (e *StatusError) Error() string { return "tool API answered " + strconv.Itoa(e.Code) }

// classify says what the tool API's answers do to the message.
func classify(err error) (deadletter.Reason, bool) {
	var se *StatusError
	switch {
	case !errors.As(err, &se):
		return "", false
	case se.Code == http.StatusTooManyRequests || se.Code >= 500:
		return deadletter.ReasonBudgetExhausted, true // transient: retried
	case se.Code == http.StatusUnauthorized || se.Code == http.StatusForbidden:
		return deadletter.ReasonAuthConfig, true // retried: a fix may land
	case se.Code == http.StatusUnprocessableEntity:
		return deadletter.ReasonSchemaInvalid, true // the args never will do
	}
	return "", false
}

// httpTools POSTs the args to TOOLS_URL/<tool> with an Idempotency-Key.
type httpTools struct{ base string }

func (h httpTools) Call(ctx context.Context, tool, key string, args json.RawMessage) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.base+"/"+tool, bytes.NewReader(args))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return "", &StatusError{Code: resp.StatusCode, RetryAfter: retryAfter(resp.Header.Get("Retry-After"), time.Now())}
	}
	return resp.Header.Get("Receipt-Id"), nil
}

// retryAfter reads a Retry-After header: delay-seconds or an HTTP date
// (RFC 9110); 0 when it is absent, malformed or in the past.
func retryAfter(v string, now time.Time) time.Duration {
	if secs, err := strconv.Atoi(v); err == nil && secs > 0 {
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

func main() {
	log := slog.New(batch.NewLogHandler(os.Stdout, nil))
	p, err := newProcessor(os.Getenv, log)
	if err != nil { // fail fast: a misconfigured worker acknowledges nothing
		log.Error("worker configuration", slog.String("error", err.Error()))
		os.Exit(1)
	}
	lambda.Start(p) // a lambda.Handler: the payload decoded once, lean (p.Handle takes an events.SQSEvent)
}

// awsConfig is the region and the execution role's credentials that the
// Lambda runtime puts in every function's environment. A Lambda needs no
// more: config.LoadDefaultConfig would also link the shared config files,
// SSO and IMDS, about 2 MB of the bootstrap that a function never uses.
func awsConfig(env func(string) string) (aws.Config, error) {
	region, key, secret := env("AWS_REGION"), env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY")
	if region == "" || key == "" || secret == "" {
		return aws.Config{}, errors.New("AWS_REGION, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set (the Lambda runtime sets them)")
	}
	creds := credentials.NewStaticCredentialsProvider(key, secret, env("AWS_SESSION_TOKEN"))
	cfg := aws.Config{Region: region, Credentials: aws.NewCredentialsCache(creds)}
	// The SDK's request-body race loses responses on a fast connection: a
	// dead letter sent twice, a ledger write retried against itself.
	sdkhttp.Apply(&cfg)
	return cfg, nil
}

func newProcessor(env func(string) string, log *slog.Logger) (*batch.Processor, error) {
	pl, err := pipeline.ParseOne([]byte(env("AGENTDLQ_PIPELINE_JSON")))
	if err != nil {
		return nil, err
	}
	awsCfg, err := awsConfig(env)
	if err != nil {
		return nil, err
	}
	cfg := batchpipeline.Config(pl) // max receive count, FIFO, backoff, lease
	// The DLQ's size, which the construct sets: a dead letter as large as
	// the hot queue's largest message fits.
	if cfg.MaxMessageBytes, err = pl.WorkerDLQMaxMessageBytes(env); err != nil {
		return nil, err
	}
	cfg.Handler, cfg.Classify = handler(httpTools{base: env("TOOLS_URL")}), classify
	cfg.SQS, cfg.DLQURL, cfg.HotQueueURL = sqs.NewFromConfig(awsCfg), env("AGENTDLQ_DLQ_URL"), env("AGENTDLQ_HOT_QUEUE_URL")
	cfg.Ledger = ledger.NewDynamo(dynamodb.NewFromConfig(awsCfg), env("AGENTDLQ_LEDGER_TABLE"))
	cfg.Concurrency, cfg.WorkerVersion, cfg.Logger = 8, env("AGENTDLQ_WORKER_VERSION"), log
	return batch.New(cfg)
}
