package lambdaenv

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoad(t *testing.T) {
	t.Parallel()
	cfg, err := Load(env(map[string]string{"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "s", "AWS_SESSION_TOKEN": "tok"}))
	require.NoError(t, err)
	assert.Equal(t, "eu-west-1", cfg.Region)
	creds, err := cfg.Credentials.Retrieve(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "AKIDEXAMPLE", creds.AccessKeyID)
	assert.Equal(t, "tok", creds.SessionToken)

	_, err = Load(env(map[string]string{"AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "s"}))
	assert.ErrorContains(t, err, "AWS_REGION is not set")
	_, err = Load(env(map[string]string{"AWS_REGION": "eu-west-1"}))
	assert.ErrorContains(t, err, "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set")
	cfg, err = Load(env(map[string]string{"AWS_DEFAULT_REGION": "us-east-2", "AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "s"}))
	require.NoError(t, err)
	assert.Equal(t, "us-east-2", cfg.Region)
}

func TestEndpoint(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     map[string]string
		service string
		want    *string // nil: the service's default endpoint
	}{
		{"none", map[string]string{}, "SQS", nil},
		{"global", map[string]string{"AWS_ENDPOINT_URL": "http://127.0.0.1:1"}, "SQS", aws.String("http://127.0.0.1:1")},
		{"per service wins", map[string]string{"AWS_ENDPOINT_URL": "http://127.0.0.1:1", "AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:2"}, "DynamoDB", aws.String("http://127.0.0.1:2")},
		{"other service's does not apply", map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:2"}, "SQS", nil},
		{"ignored", map[string]string{"AWS_ENDPOINT_URL": "http://127.0.0.1:1", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true"}, "SQS", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, Endpoint(env(tt.env), tt.service))
		})
	}
}

func TestMemoryLimit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		env   map[string]string
		limit int64 // want
		ok    bool  // want
	}{
		{"90% of 1024 MiB", map[string]string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024"}, 1024 << 20 / 10 * 9, true},
		{"90% of 128 MiB", map[string]string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "128"}, 128 << 20 / 10 * 9, true},
		{"GOMEMLIMIT set: the runtime's", map[string]string{"GOMEMLIMIT": "900MiB", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024"}, 0, false},
		{"no size", map[string]string{}, 0, false},
		{"size not a number", map[string]string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1GB"}, 0, false},
		{"size zero", map[string]string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "0"}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			limit, ok := MemoryLimit(env(tt.env))
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.limit, limit)
		})
	}
}

func TestVCPUs(t *testing.T) {
	t.Parallel()
	for mb, want := range map[int]int{128: 1, 256: 1, 1769: 1, 1770: 2, 3008: 2, 10240: 6} {
		assert.Equal(t, want, VCPUs(mb), "%d MB", mb)
	}
}

func TestMaxProcs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		n    int  // want
		ok   bool // want
	}{
		{"256 MB: one P", map[string]string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256"}, 1, true},
		{"4096 MB: three", map[string]string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "4096"}, 3, true},
		{"GOMAXPROCS set: the runtime's", map[string]string{"GOMAXPROCS": "2", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256"}, 0, false},
		{"no size", map[string]string{}, 0, false},
		{"size not a number", map[string]string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1GB"}, 0, false},
		{"size zero", map[string]string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "0"}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, ok := MaxProcs(env(tt.env))
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.n, n)
		})
	}
}
