package awscfg

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/config"
)

type optionsKey struct{}

// Options are what a command line chooses of the AWS config, as the AWS
// CLI's --profile and --region: a named profile of the shared config and
// credentials files, and the region. Empty fields leave the SDK's own
// resolution (AWS_PROFILE, AWS_REGION, the files) alone.
type Options struct {
	Profile string
	Region  string
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
	return fns
}
