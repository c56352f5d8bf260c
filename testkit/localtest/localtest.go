// Package localtest gives tests the running local emulators (fauxqs for SQS,
// dynalite for DynamoDB, gofakes3 for S3) and fresh, uniquely named resources
// on them, deleted when the test ends.
//
// Tests find the emulators through AWS_ENDPOINT_URL_SQS, _DYNAMODB and _S3
// (`make test` starts the emulators on free ports and exports them). When
// they are unset a test is skipped, unless AGENTDLQ_REQUIRE_EMULATORS=1, which
// `make test` sets, turns the skip into a failure: a green `make test` has run
// every emulator test.
//
// Packages run in parallel against the same emulators, so every resource
// carries a random suffix.
package localtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/agentdlq/agentdlq/internal/awscfg"
	"github.com/agentdlq/agentdlq/internal/textutil"
	"github.com/agentdlq/agentdlq/local/topology"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/sdkhttp"
)

// Environment variables read by AWS.
const (
	EnvSQS      = "AWS_ENDPOINT_URL_SQS"
	EnvDynamoDB = "AWS_ENDPOINT_URL_DYNAMODB"
	EnvS3       = "AWS_ENDPOINT_URL_S3"
	EnvRequire  = "AGENTDLQ_REQUIRE_EMULATORS"
	// EnvSDKLog=1 makes the test clients also log every retried attempt (aws.LogRetries).
	EnvSDKLog = "AGENTDLQ_TEST_SDK_LOG"
	Region    = "us-east-1"
)

// AWS returns an aws.Config for the running emulators: the endpoints from
// AWS_ENDPOINT_URL_SQS / _DYNAMODB / _S3, dummy static credentials, region
// us-east-1 and S3 path-style addressing. It skips the test when the
// emulators are not configured, and fails it when AGENTDLQ_REQUIRE_EMULATORS=1.
func AWS(t testing.TB) aws.Config {
	t.Helper()
	var missing []string
	for _, k := range []string{EnvSQS, EnvDynamoDB, EnvS3} {
		if os.Getenv(k) == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		msg := fmt.Sprintf("local emulators not configured (%s unset): run `make test`, or `make local-up && eval \"$(make -s local-env)\"`", strings.Join(missing, ", "))
		if os.Getenv(EnvRequire) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	cfg, err := config.LoadDefaultConfig(context.Background(),
		config.WithRegion(Region),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")),
		config.WithRetryMaxAttempts(3),
	)
	if err != nil {
		t.Fatalf("localtest: aws config: %v", err)
	}
	awscfg.S3PathStyle(&cfg)
	sdkhttp.Apply(&cfg) // as awscfg.Load and lambdaenv.Load do: the SDK's request-body race
	// An HTTP exchange with an emulator that fails or breaks off is logged
	// (only then): a flake then says what the client saw.
	cfg.HTTPClient = debugClient{base: cfg.HTTPClient}
	if os.Getenv(EnvSDKLog) == "1" {
		cfg.ClientLogMode = aws.LogRetries // and every retried attempt
	}
	return cfg
}

// Unique returns prefix-<12 hex digits>, safe as a queue, table or bucket name
// fragment.
func Unique(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// Queues creates a uniquely named hot queue and DLQ pair for p, exactly as
// topology.Create builds the local topology (the pipeline's redrive policy,
// retentions, visibility timeout, tags and redrive allow policy), and deletes
// both when the test ends. The tags carry p's own name.
func Queues(t testing.TB, cfg aws.Config, p *pipeline.Pipeline) pipeline.Queues {
	t.Helper()
	client := sqs.NewFromConfig(cfg)
	base := Unique("t-" + textutil.Truncate(p.Name, 40))
	n := topology.Names{Hot: base, DLQ: base + "-dlq"}
	if p.FIFO {
		n = topology.Names{Hot: base + ".fifo", DLQ: base + "-dlq.fifo"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	q, err := topology.CreateNamed(ctx, client, p, n)
	if err != nil {
		t.Fatalf("localtest: create queues for %q: %v", p.Name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, url := range []string{q.HotURL, q.DLQURL} {
			if _, err := client.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}); err != nil {
				t.Logf("localtest: delete queue %s: %v", url, err)
			}
		}
	})
	return q
}

// Table creates a fresh ledger table (partition key `pk`, a string; on-demand
// billing), waits until it is active, and deletes it when the test ends.
func Table(t testing.TB, cfg aws.Config) string {
	t.Helper()
	client := dynamodb.NewFromConfig(cfg)
	name := Unique("agentdlq-ledger-test")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := topology.CreateLedgerTable(ctx, client, name); err != nil {
		t.Fatalf("localtest: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)}); err != nil {
			t.Logf("localtest: delete table %s: %v", name, err)
		}
	})
	return name
}

// Bucket creates a fresh S3 bucket and, when the test ends, deletes its
// objects and the bucket.
func Bucket(t testing.TB, cfg aws.Config) string {
	t.Helper()
	client := s3.NewFromConfig(cfg)
	name := Unique("agentdlq-test")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("localtest: create bucket %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		pages := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(name)})
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				t.Logf("localtest: list bucket %s: %v", name, err)
				return
			}
			for _, o := range page.Contents {
				if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(name), Key: o.Key}); err != nil {
					t.Logf("localtest: delete s3://%s/%s: %v", name, aws.ToString(o.Key), err)
				}
			}
		}
		if _, err := client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(name)}); err != nil {
			t.Logf("localtest: delete bucket %s: %v", name, err)
		}
	})
	return name
}
