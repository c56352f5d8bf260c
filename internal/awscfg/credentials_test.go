package awscfg

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/logging"
)

// noCredentials clears every source of credentials the SDK reads and turns
// the EC2 role lookup off (what a laptop's shell without `aws configure` has).
func noCredentials(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ENDPOINT_URL_SQS", "http://127.0.0.1:1")
	for _, k := range []string{"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN"} {
		t.Setenv(k, "")
		if err := os.Unsetenv(k); err != nil {
			t.Fatal(err)
		}
	}
}

// A call without credentials fails with a CredentialsError, before any
// request is sent (the endpoint is one where nothing answers).
func TestNoCredentialsIsACredentialsError(t *testing.T) {
	noCredentials(t)
	cfg, err := Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_, err = sqs.NewFromConfig(cfg).ListQueues(context.Background(), &sqs.ListQueuesInput{})
	if !IsCredentials(err) {
		t.Fatalf("err = %v, want a CredentialsError", err)
	}
	var ce *CredentialsError
	if errors.As(err, &ce); ce.Err == nil {
		t.Fatal("the provider's own error is kept")
	}
}

// With credentials, a call that cannot reach its endpoint is no
// CredentialsError, and the typed provider still says what it wraps.
func TestCredentialsErrorOnlyForCredentials(t *testing.T) {
	noCredentials(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	cfg, err := Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !aws.IsCredentialsProvider(typedCredentials{p: aws.AnonymousCredentials{}}, (*aws.AnonymousCredentials)(nil)) {
		t.Error("the typed provider hides anonymous credentials (the clients would sign with them)")
	}
	_, err = sqs.NewFromConfig(cfg).ListQueues(context.Background(), &sqs.ListQueuesInput{}, func(o *sqs.Options) { o.RetryMaxAttempts = 1 })
	if err == nil || IsCredentials(err) {
		t.Fatalf("err = %v, want a connection error that is not a CredentialsError", err)
	}
}

// Options.Logger receives the SDK's own log lines.
func TestOptionsLogger(t *testing.T) {
	noCredentials(t)
	var got []string
	l := logging.LoggerFunc(func(_ logging.Classification, format string, _ ...any) { got = append(got, format) })
	cfg, err := Load(WithOptions(context.Background(), Options{Logger: l}))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger.Logf(logging.Warn, "falling back to IMDSv1: %v", "x")
	if len(got) != 1 {
		t.Fatalf("the SDK's logger is not the option's: %v", got)
	}
}
