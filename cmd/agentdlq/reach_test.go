package main

import (
	"encoding/json"
	"errors"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// shell gives the CLI a shell as a newcomer has one: no AWS credentials
// anywhere (no files, no EC2 role: AWS_EC2_METADATA_DISABLED keeps the test
// from waiting on one), no endpoint, no queue overrides, and the local
// state directory local (AGENTDLQ_LOCAL_DIR; "" for a checkout without one).
func shell(t *testing.T, local string) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(home, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(home, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_REGION", "us-east-1")
	for _, k := range []string{"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
		"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_STS",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_WEB_IDENTITY_TOKEN_FILE",
		"AGENTDLQ_HOT_QUEUE_URL", "AGENTDLQ_HOT_QUEUE_ARN", "AGENTDLQ_DLQ_URL", "AGENTDLQ_DLQ_ARN"} {
		t.Setenv(k, "")
		require.NoError(t, os.Unsetenv(k))
	}
	if local == "" {
		local = filepath.Join(t.TempDir(), "no-such-dir")
	}
	t.Setenv("AGENTDLQ_LOCAL_DIR", local)
}

// localDir is a local state directory as scripts/local.sh leaves it: with
// the env file of emulators on sqsEndpoint while they run ("": stopped).
func localDir(t *testing.T, sqsEndpoint string) string {
	t.Helper()
	dir := t.TempDir()
	if sqsEndpoint != "" {
		env := "export AWS_ENDPOINT_URL_SQS=" + sqsEndpoint + "\nexport AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:2\nexport AWS_ACCESS_KEY_ID=test\n"
		require.NoError(t, os.WriteFile(filepath.Join(dir, "env"), []byte(env), 0o644))
	}
	return dir
}

// withCredentials sets the dummy credentials and one endpoint for every service.
func withCredentials(t *testing.T, endpoint string) {
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_ENDPOINT_URL", endpoint)
}

// A command that cannot reach AWS or the emulators says which (no
// credentials, endpoint down) and names make local-up or local-env when the
// checkout has a local state directory (issue 30): it used to print the
// SDK's IMDS warning and "no EC2 IMDS role found", or "dial tcp 127.0.0.1:1:
// connect: connection refused", and nothing else.
func TestUnreachableSaysWhichAndWhatToRun(t *testing.T) {
	const down = "http://127.0.0.1:1" // nothing listens on port 1
	tests := []struct {
		name     string
		local    func(t *testing.T) string
		endpoint string // "" with no credentials
		want     []string
		wantNot  []string
	}{
		{"no credentials, emulators running", func(t *testing.T) string { return localDir(t, "http://127.0.0.1:3") }, "",
			[]string{"hint: no AWS credentials in this shell, and no endpoint", `eval "$(make -s local-env)"`}, []string{"make local-up"}},
		{"no credentials, emulators stopped", func(t *testing.T) string { return localDir(t, "") }, "",
			[]string{"hint: no AWS credentials in this shell", "make local-up", `eval "$(make -s local-env)"`, "aws configure"}, nil},
		{"no credentials, no local state", func(*testing.T) string { return "" }, "",
			[]string{"hint: no AWS credentials in this shell", "aws configure"}, []string{"make local-up", "local-env"}},
		{"endpoint down, the emulators recorded there", func(t *testing.T) string { return localDir(t, down) }, down,
			[]string{"hint: nothing answers at " + down, "are not answering; restart them with make local-up"}, nil},
		{"endpoint down, emulators on other ports", func(t *testing.T) string { return localDir(t, "http://127.0.0.1:3") }, down,
			[]string{"hint: nothing answers at " + down, "run on other ports", `eval "$(make -s local-env)"`}, nil},
		{"endpoint down, emulators stopped", func(t *testing.T) string { return localDir(t, "") }, down,
			[]string{"hint: nothing answers at " + down, "not running; start them with make local-up", `eval "$(make -s local-env)"`}, nil},
		{"endpoint down, no local state", func(*testing.T) string { return "" }, down,
			[]string{"hint: nothing answers at " + down, "unset the variable to use AWS"}, []string{"make local-up", "local-env"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			shell(t, tc.local(t))
			if tc.endpoint != "" {
				withCredentials(t, tc.endpoint)
			}
			_, stderr, code := runArgs(t, "triage", "--pipeline", "agent-tasks")
			assert.Equal(t, exitFailed, code, stderr)
			for _, w := range tc.want {
				assert.Contains(t, stderr, w)
			}
			for _, w := range tc.wantNot {
				assert.NotContains(t, stderr, w)
			}
			assert.NotContains(t, stderr, "IMDSv1", "the SDK's own warning goes to the --verbose log")
		})
	}
}

// With -o json the hint is a field of the error.
func TestUnreachableHintInJSON(t *testing.T) {
	shell(t, localDir(t, ""))
	withCredentials(t, "http://127.0.0.1:1")
	stdout, _, code := runArgs(t, "redrive", "plan", "--pipeline", "agent-tasks", "-o", "json")
	assert.Equal(t, exitFailed, code)
	var je jsonError
	require.NoError(t, json.Unmarshal([]byte(stdout), &je), stdout)
	assert.Contains(t, je.Hint, "make local-up")
	assert.Contains(t, je.Error, "connection refused")
}

// A request that went to AWS (no endpoint set) and found no network: the
// hint says that no endpoint is set, and names local-env while the
// emulators run. (Built from the error types: a real call would reach AWS
// wherever the machine has a network.)
func TestHintNoEndpoint(t *testing.T) {
	shell(t, localDir(t, "http://127.0.0.1:3"))
	err := errors.Join(errors.New("operation error SQS: GetQueueUrl"),
		&url.Error{Op: "Post", URL: "https://sqs.us-east-1.amazonaws.com/", Err: &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "sqs.us-east-1.amazonaws.com", IsNotFound: true}}})
	h := reachHint(err)
	assert.True(t, strings.HasPrefix(h, "no endpoint is set, so this command went to AWS (sqs.us-east-1.amazonaws.com)"), h)
	assert.Contains(t, h, `eval "$(make -s local-env)"`)

	assert.Empty(t, reachHint(errors.New("QueueDoesNotExist")), "no hint for what is not about reaching AWS")
	assert.Empty(t, reachHint(&url.Error{Op: "Post", URL: "http://127.0.0.1:1/", Err: errors.New("EOF")}), "an answer cut short is not an endpoint down")
}

// The SDK's own log lines go to the command's log at info: --verbose shows them.
func TestSDKLogLinesAreVerbose(t *testing.T) {
	for _, verbose := range []bool{false, true} {
		var b strings.Builder
		g := &globalFlags{stderr: &b, logFormat: logJSON, verbose: verbose}
		sdkLogger{g}.Logf("WARN", "falling back to IMDSv1: %v", "403")
		if verbose {
			assert.Contains(t, b.String(), "aws sdk: falling back to IMDSv1: 403")
		} else {
			assert.Empty(t, b.String())
		}
	}
}
