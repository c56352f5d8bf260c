package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Unknown flags get suggestions as unknown commands do (docs/cli.md), and a
// misspelt command followed by the flags of the command meant is refused as
// the unknown command it is, not as an unknown flag of the root (issue 30).
func TestUnknownFlagsAndCommandsGetSuggestions(t *testing.T) {
	tests := []struct {
		args     []string
		want     []string
		wantNot  []string
		helpLine string
	}{
		{[]string{"triage", "--pipline", "agent-tasks"}, []string{"unknown flag: --pipline", "Did you mean this?\n\t--pipeline\n"}, nil, "agentdlq triage --help"},
		{[]string{"redrive", "plan", "--pipline", "agent-tasks"}, []string{"unknown flag: --pipline", "\t--pipeline\n"}, nil, "agentdlq redrive plan --help"},
		{[]string{"triage", "--verbos"}, []string{"unknown flag: --verbos", "\t--verbose\n"}, nil, "agentdlq triage --help"},
		{[]string{"triage", "--pipe", "agent-tasks"}, []string{"\t--pipeline\n"}, nil, "agentdlq triage --help"},
		{[]string{"redriv", "plan", "--pipeline", "agent-tasks"}, []string{`unknown command "redriv" for "agentdlq"`, "Did you mean this?\n\tredrive\n"}, []string{"unknown flag"}, "agentdlq --help"},
		{[]string{"ledger", "gt", "--key", "k"}, []string{`unknown command "gt" for "agentdlq ledger"`, "\tget\n"}, []string{"unknown flag"}, "agentdlq ledger --help"},
		{[]string{"triage", "--zzzzzzzz"}, []string{"unknown flag: --zzzzzzzz"}, []string{"Did you mean"}, "agentdlq triage --help"},
	}
	for _, tc := range tests {
		_, stderr, code := runArgs(t, tc.args...)
		assert.Equal(t, exitRefused, code, "%v: %s", tc.args, stderr)
		for _, w := range tc.want {
			assert.Contains(t, stderr, w, tc.args)
		}
		for _, w := range tc.wantNot {
			assert.NotContains(t, stderr, w, tc.args)
		}
		assert.Contains(t, stderr, "Run '"+tc.helpLine+"' for usage.", tc.args)
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"pipline", "pipeline", 1}, {"pipeline", "pipeline", 0}, {"owner", "onwer", 2}, {"", "abc", 3}, {"kitten", "sitting", 3}} {
		assert.Equal(t, tc.d, editDistance(tc.a, tc.b), "%q %q", tc.a, tc.b)
	}
}

// Counts are said in words: "1 message", not "1 messages" (issue 30).
func TestCanaryWaitCountsInWords(t *testing.T) {
	for _, tc := range []struct {
		moved int
		want  string
	}{{1, "for the outcome of 1 message ("}, {3, "for the outcome of 3 messages ("}} {
		var b strings.Builder
		canaryProgress(&errConsole{w: &b})(tc.moved, tc.moved, 0, 3*time.Second)
		assert.Contains(t, b.String(), tc.want)
	}
}
