// Package lambdaenv builds an aws.Config from the environment the Lambda
// runtime gives every function: AWS_REGION and the execution role's
// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, plus the
// SDK's endpoint variables AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_<SERVICE>
// for local endpoints.
//
// It stands in for config.LoadDefaultConfig in the worker's bootstrap, which
// never uses shared config files, profiles, SSO or IMDS: leaving that
// machinery out keeps the arm64 bootstrap under its 10 MB budget. Tools that
// run on a person's machine keep config.LoadDefaultConfig (internal/awscfg).
package lambdaenv

import (
	"errors"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/agentdlq/agentdlq/sdkhttp"
)

// Load returns a Config with the region and the static credentials of the
// environment; lookup is os.Getenv in production.
func Load(lookup func(string) string) (aws.Config, error) {
	region := lookup("AWS_REGION")
	if region == "" {
		region = lookup("AWS_DEFAULT_REGION")
	}
	if region == "" {
		return aws.Config{}, errors.New("AWS_REGION is not set (the Lambda runtime always sets it)")
	}
	key, secret := lookup("AWS_ACCESS_KEY_ID"), lookup("AWS_SECRET_ACCESS_KEY")
	if key == "" || secret == "" {
		return aws.Config{}, errors.New("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set (the Lambda runtime sets them from the execution role)")
	}
	cfg := aws.Config{
		Region:      region,
		Credentials: aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(key, secret, lookup("AWS_SESSION_TOKEN"))),
	}
	sdkhttp.Apply(&cfg) // the SDK's request-body race: see sdkhttp
	return cfg, nil
}

// Endpoint returns the custom endpoint for a service as the SDK's own
// settings name it — AWS_ENDPOINT_URL_<SERVICE> (service id upper-cased,
// spaces as underscores: "SQS", "DYNAMODB"), else AWS_ENDPOINT_URL — or nil
// for the service's default endpoint. AWS_IGNORE_CONFIGURED_ENDPOINT_URLS
// turns both off, as in the SDK.
func Endpoint(lookup func(string) string, serviceID string) *string {
	if strings.EqualFold(lookup("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"), "true") {
		return nil
	}
	name := "AWS_ENDPOINT_URL_" + strings.ReplaceAll(strings.ToUpper(serviceID), " ", "_")
	if v := lookup(name); v != "" {
		return aws.String(v)
	}
	if v := lookup("AWS_ENDPOINT_URL"); v != "" {
		return aws.String(v)
	}
	return nil
}

// MemoryLimit is the Go heap's soft limit for a function whose environment
// has no GOMEMLIMIT (the agentdlq construct sets one at 90% of the memory
// size; another deployment may not): 90% of AWS_LAMBDA_FUNCTION_MEMORY_SIZE
// MiB, which the Lambda runtime always sets. Without a limit the heap may
// grow to twice the live heap before a collection, past the function's
// memory on a large batch. ok is false when GOMEMLIMIT is set (the Go
// runtime has read it) or the size is missing or not a positive number.
func MemoryLimit(lookup func(string) string) (limit int64, ok bool) {
	if lookup("GOMEMLIMIT") != "" {
		return 0, false
	}
	mb, err := strconv.ParseInt(lookup("AWS_LAMBDA_FUNCTION_MEMORY_SIZE"), 10, 64)
	if err != nil || mb <= 0 || mb > 1<<20 {
		return 0, false
	}
	return mb << 20 / 10 * 9, true
}

// MBPerVCPU is the memory at which a Lambda function has the CPU of one
// vCPU (one vCPU-second of credits a second): Lambda allocates CPU in
// proportion to memory.
const MBPerVCPU = 1769

// VCPUs is GOMAXPROCS for a function of memoryMB: the vCPUs its memory pays
// for, rounded up, at least 1. Lambda shows a function two cores or more at
// every size, and the Go runtime's default GOMAXPROCS is what it sees; but
// below 1,769 MB their credits add up to less than one vCPU, and a second P
// only runs the collector's idle and fractional mark workers, and the
// preemptions they cause, on CPU the function does not have (the worker's
// bench measured about twice the CPU a record with 2 as with 1:
// docs/performance.md). The worker handles records one at a time by
// default, and its concurrent mode waits on I/O, which one P serves.
func VCPUs(memoryMB int) int {
	return max(1, (memoryMB+MBPerVCPU-1)/MBPerVCPU)
}

// MaxProcs is VCPUs of AWS_LAMBDA_FUNCTION_MEMORY_SIZE for a function whose
// environment has no GOMAXPROCS (the agentdlq construct sets it; another
// deployment may not). ok is false when GOMAXPROCS is set (the Go runtime
// has read it) or the size is missing or not a positive number.
func MaxProcs(lookup func(string) string) (n int, ok bool) {
	if lookup("GOMAXPROCS") != "" {
		return 0, false
	}
	mb, err := strconv.Atoi(lookup("AWS_LAMBDA_FUNCTION_MEMORY_SIZE"))
	if err != nil || mb <= 0 || mb > 1<<20 {
		return 0, false
	}
	return VCPUs(mb), true
}
