package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/internal/awscfg"
	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
)

// The locality decision reads each client's endpoint as the SDK resolved it
// (AWS_ENDPOINT_URL_<SERVICE>, the shared config's services section,
// AWS_ENDPOINT_URL, AWS_IGNORE_CONFIGURED_ENDPOINT_URLS), not one variable.
func TestLocalityAsTheSDKResolvesEndpoints(t *testing.T) {
	const lo = "http://127.0.0.1:4566"
	shared := filepath.Join(t.TempDir(), "config")
	require.NoError(t, os.WriteFile(shared, []byte("[profile emu]\nregion = us-east-1\nservices = emu\n\n[services emu]\nsqs =\n  endpoint_url = "+lo+"\ndynamodb =\n  endpoint_url = "+lo+"\ns3 =\n  endpoint_url = "+lo+"\n"), 0o600))
	for _, tt := range []struct {
		name  string
		env   map[string]string
		local bool
		code  redrivetype.Code
	}{
		{"make local-env: SQS, DynamoDB, S3 local, STS unset", map[string]string{"AWS_ENDPOINT_URL_SQS": lo, "AWS_ENDPOINT_URL_DYNAMODB": lo, "AWS_ENDPOINT_URL_S3": lo}, true, ""},
		{"AWS_ENDPOINT_URL alone covers every service", map[string]string{"AWS_ENDPOINT_URL": lo}, true, ""},
		{"SQS local, DynamoDB the SDK's default (AWS)", map[string]string{"AWS_ENDPOINT_URL_SQS": lo, "AWS_ENDPOINT_URL_S3": lo}, false, ""},
		{"global local, DynamoDB AWS: STS (the global one) is refused", map[string]string{"AWS_ENDPOINT_URL": lo, "AWS_ENDPOINT_URL_DYNAMODB": "https://dynamodb.us-east-1.amazonaws.com"}, false, redrivetype.CodeSTSEndpoint},
		{"endpoints ignored: all AWS", map[string]string{"AWS_ENDPOINT_URL": lo, "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true"}, false, ""},
		{"the shared config's services section", map[string]string{"AWS_CONFIG_FILE": shared, "AWS_PROFILE": "emu"}, true, ""},
		{"the services section, STS pointed elsewhere", map[string]string{"AWS_CONFIG_FILE": shared, "AWS_PROFILE": "emu", "AWS_ENDPOINT_URL_DYNAMODB": "https://dynamodb.us-east-1.amazonaws.com", "AWS_ENDPOINT_URL_STS": "http://10.1.2.3"}, false, redrivetype.CodeSTSEndpoint},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_STS",
				"AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "AWS_PROFILE"} {
				t.Setenv(k, "")
			}
			t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
			t.Setenv("AWS_REGION", "us-east-1")
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			cfg, err := awscfg.Load(context.Background())
			require.NoError(t, err)
			local, err := redrive.Locality(clientsOf(cfg, "agentdlq-ledger"))
			assert.Equal(t, tt.local, local)
			assert.Equal(t, tt.code, redrive.RefusalCode(err), err)
		})
	}
}
