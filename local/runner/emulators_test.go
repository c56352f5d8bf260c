package runner

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestParseExports(t *testing.T) {
	t.Parallel()
	got := ParseExports("export AWS_ENDPOINT_URL_SQS=http://127.0.0.1:4566\nexport AWS_REGION='us-east-1'\n\n# comment\nexport =x\n")
	assert.Equal(t, map[string]string{"AWS_ENDPOINT_URL_SQS": "http://127.0.0.1:4566", "AWS_REGION": "us-east-1"}, got)
}
