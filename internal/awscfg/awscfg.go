// Package awscfg loads the aws.Config that every agentdlq client is built
// from, in AWS and against the local emulators alike.
//
// Endpoints come from the SDK's own settings: AWS_ENDPOINT_URL, or per service
// AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL_DYNAMODB and AWS_ENDPOINT_URL_S3
// (read by config.LoadDefaultConfig; `make -s local-env` prints them). The one
// thing the SDK does not infer is S3 path-style addressing: a custom S3
// endpoint such as the local gofakes3 server cannot serve virtual-hosted
// buckets (bucket.127.0.0.1), so S3PathStyle turns path style on for every S3
// client built from the config whenever its endpoint is custom.
//
// Every config Load returns carries sdkhttp's fix for the SDK's
// request-body race, which otherwise loses responses (ReceiveMessage's
// messages among them) on a fast or loaded connection.
package awscfg

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentdlq/agentdlq/sdkhttp"
)

// Load is config.LoadDefaultConfig with S3PathStyle and sdkhttp.Apply applied, and the
// profile, region and logger of the Options ctx carries (WithOptions) applied
// before optFns. A call that finds no credentials fails with a
// CredentialsError.
func Load(ctx context.Context, optFns ...func(*config.LoadOptions) error) (aws.Config, error) {
	cfg, err := config.LoadDefaultConfig(ctx, append(OptionsFrom(ctx).loadOptions(), optFns...)...)
	if err != nil {
		return aws.Config{}, err
	}
	S3PathStyle(&cfg)
	sdkhttp.Apply(&cfg)
	typeCredentials(&cfg)
	return cfg, nil
}

// S3PathStyle makes every S3 client built from cfg (s3.NewFromConfig) use
// path-style addressing when its endpoint is custom (AWS_ENDPOINT_URL_S3,
// AWS_ENDPOINT_URL or BaseEndpoint). In AWS, with no custom endpoint, it
// changes nothing.
func S3PathStyle(cfg *aws.Config) {
	cfg.ServiceOptions = append(cfg.ServiceOptions, func(serviceID string, o any) {
		if so, ok := o.(*s3.Options); ok && serviceID == s3.ServiceID && so.BaseEndpoint != nil {
			so.UsePathStyle = true
		}
	})
}
