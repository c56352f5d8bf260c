package redrive

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/redrive/audit"
)

// clientEndpoints are the endpoints of the clients cfg holds, as each
// client reveals it: an SDK client's Options().BaseEndpoint (what the SDK
// resolved from AWS_ENDPOINT_URL_<SERVICE>, the shared config or
// AWS_ENDPOINT_URL; "" for AWS itself), the ledger's DynamoDB client when
// the ledger says which it is (ledger.Dynamo.API). A client that reveals
// none (an in-process fake, the memory ledger, the local mapping switch)
// is not an endpoint and does not count.
func clientEndpoints(cfg Config) []endpoint {
	var eps []endpoint
	add := func(service, url string, awsOnly bool) {
		eps = append(eps, endpoint{Service: service, URL: url, AWSOnly: awsOnly})
	}
	if c, ok := cfg.SQS.(interface{ Options() sqs.Options }); ok {
		add("SQS", aws.ToString(c.Options().BaseEndpoint), false)
	}
	if c, ok := cfg.STS.(interface{ Options() sts.Options }); ok {
		add("STS", aws.ToString(c.Options().BaseEndpoint), true)
	}
	if c, ok := cfg.Evidence.(interface{ Options() s3.Options }); ok {
		add("S3", aws.ToString(c.Options().BaseEndpoint), false)
	}
	if c, ok := cfg.EvidenceWriter.(interface{ Options() s3.Options }); ok {
		add("S3", aws.ToString(c.Options().BaseEndpoint), false)
	}
	if c, ok := cfg.Lambda.(interface{ Options() lambda.Options }); ok {
		add("Lambda", aws.ToString(c.Options().BaseEndpoint), true)
	}
	if l, ok := cfg.Ledger.(interface{ API() ledger.DynamoAPI }); ok {
		if c, ok := l.API().(interface{ Options() dynamodb.Options }); ok {
			add("DynamoDB", aws.ToString(c.Options().BaseEndpoint), false)
		}
	}
	if cfg.Audit != nil {
		if st, ok := cfg.Audit.Store.(*audit.S3Store); ok {
			if c, ok := st.API.(interface{ Options() s3.Options }); ok {
				add("S3", aws.ToString(c.Options().BaseEndpoint), false)
			}
		}
	}
	return eps
}

// Locality is the one decision whether the caller identity check is
// skipped, New's own, made from cfg's clients and nothing else: SQS, STS,
// Evidence, Lambda, the ledger's DynamoDB client (ledger.Dynamo.API) and an
// S3 audit store's client, each by the endpoint it resolved
// (Options().BaseEndpoint). It is local only when every client that
// reveals an endpoint is on this machine (the local emulators, where there
// is no IAM), and at least one does. Otherwise the check runs, and STS
// must be AWS's own endpoint: any other STS is refused (CodeSTSEndpoint),
// because a caller ARN from it proves nothing.
//
// A caller may ask before it has the rest of a Config (only the clients
// are read): to refuse an untrusted STS before any AWS call, or to give a
// local worker's mapping switch as Config.Lambda. No Config field turns the
// check off.
func Locality(cfg Config) (local bool, err error) {
	eps := clientEndpoints(cfg)
	if _, ok := cfg.STS.(interface{ Options() sts.Options }); !ok {
		// No STS, or one that does not say where it runs: taken as AWS's
		// own; without one, New refuses unless every endpoint is local.
		eps = append(eps, endpoint{Service: "STS", AWSOnly: true})
	}
	return localityOf(eps)
}
