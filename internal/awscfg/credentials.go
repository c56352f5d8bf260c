package awscfg

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// CredentialsError is a call that could not start because no AWS
// credentials could be found or refreshed: none in the environment, the
// shared files or the profile, and no container or EC2 role answered (the
// SDK's "no EC2 IMDS role found" is the last provider of its chain
// failing). Every client of a config Load returns reports it so, whatever
// the provider's own error, so that a caller can tell "no credentials" from
// "endpoint down" with errors.As.
type CredentialsError struct {
	Err error
}

func (e *CredentialsError) Error() string { return "no AWS credentials: " + e.Err.Error() }
func (e *CredentialsError) Unwrap() error { return e.Err }

// IsCredentials reports whether err is (or wraps) a CredentialsError.
func IsCredentials(err error) bool {
	var ce *CredentialsError
	return errors.As(err, &ce)
}

// typedCredentials is the config's credentials provider with its errors
// typed as CredentialsError. It keeps what the SDK asks of a provider:
// IsCredentialsProvider (anonymous credentials skip signing) and the
// provider sources of its metrics.
type typedCredentials struct {
	p aws.CredentialsProvider
}

func (t typedCredentials) Retrieve(ctx context.Context) (aws.Credentials, error) {
	c, err := t.p.Retrieve(ctx)
	if err != nil {
		return c, &CredentialsError{Err: err}
	}
	return c, nil
}

func (t typedCredentials) IsCredentialsProvider(target aws.CredentialsProvider) bool {
	return aws.IsCredentialsProvider(t.p, target)
}

func (t typedCredentials) ProviderSources() []aws.CredentialSource {
	if s, ok := t.p.(aws.CredentialProviderSource); ok {
		return s.ProviderSources()
	}
	return nil
}

// typeCredentials makes cfg's credential errors CredentialsError.
func typeCredentials(cfg *aws.Config) {
	if cfg.Credentials != nil {
		cfg.Credentials = typedCredentials{p: cfg.Credentials}
	}
}
