package awscfg

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/smithy-go/logging"
)

type optionsKey struct{}

// Options are what a command line chooses of the AWS config, as the AWS
// CLI's --profile and --region: a named profile of the shared config and
// credentials files, and the region. Empty fields leave the SDK's own
// resolution (AWS_PROFILE, AWS_REGION, the files) alone.
type Options struct {
	Profile string
	Region  string
	// Logger is optional (default: the SDK's, on stderr): where the SDK's
	// own log lines go, such as "falling back to IMDSv1" when no
	// credentials are configured off EC2 (a command line sends them to its
	// --verbose log; the failure itself comes back as a CredentialsError).
	Logger logging.Logger
}

// WithOptions returns ctx carrying o: every Load with that context (or one
// derived from it) applies o before its own optFns.
func WithOptions(ctx context.Context, o Options) context.Context {
	return context.WithValue(ctx, optionsKey{}, o)
}

// OptionsFrom is the Options ctx carries (zero when none).
func OptionsFrom(ctx context.Context) Options {
	o, _ := ctx.Value(optionsKey{}).(Options)
	return o
}

// loadOptions turns o into config.LoadDefaultConfig options.
func (o Options) loadOptions() []func(*config.LoadOptions) error {
	var fns []func(*config.LoadOptions) error
	if o.Profile != "" {
		fns = append(fns, config.WithSharedConfigProfile(o.Profile))
	}
	if o.Region != "" {
		fns = append(fns, config.WithRegion(o.Region))
	}
	if o.Logger != nil {
		fns = append(fns, config.WithLogger(o.Logger))
	}
	return fns
}
