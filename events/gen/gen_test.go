package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the generated files")

// root is the repository root, seen from this package's directory.
const root = "../.."

// TestGeneratedFilesUpToDate fails when a committed fixture, expected.json or
// docs/reasons.md differs from what the generator makes now (after a change
// to the taxonomy, the generator or the decoder). Rewrite them with
// go test ./events/gen -update (or go run ./events/gen).
func TestGeneratedFilesUpToDate(t *testing.T) {
	files, err := Generate()
	require.NoError(t, err)
	for _, f := range files {
		path := filepath.Join(root, f.Path)
		if *update {
			require.NoError(t, os.WriteFile(path, f.Data, 0o644))
			continue
		}
		got, err := os.ReadFile(path)
		require.NoError(t, err, "%s is missing: run go run ./events/gen", f.Path)
		if !bytes.Equal(got, f.Data) {
			t.Errorf("%s drifted from the generator: run go run ./events/gen (or go test ./events/gen -update) and review the diff", f.Path)
		}
	}
	// No stale fixture left behind by a renamed scenario.
	on, err := filepath.Glob(filepath.Join(root, TestdataDir, "sqs-*.json"))
	require.NoError(t, err)
	made := map[string]bool{}
	for _, f := range files {
		made[filepath.Join(root, f.Path)] = true
	}
	for _, p := range on {
		assert.True(t, made[p], "%s is not made by the generator", p)
	}
}

func TestGenerateIsDeterministic(t *testing.T) {
	a, err := Generate()
	require.NoError(t, err)
	b, err := Generate()
	require.NoError(t, err)
	assert.Equal(t, a, b)
}

func TestOutcomeConventions(t *testing.T) {
	tests := []struct {
		name    string
		tool    string
		fault   obj
		receive int
		outcome string // want
		reason  string // want
	}{
		{"no fault", "web.search", nil, 1, OutcomeOK, ""},
		{"503 first receive", "web.search", transient(503, 0), 1, OutcomeRetry, ""},
		{"429 receive 3", "web.search", transient(429, 0), 3, OutcomeRetry, ""},
		{"503 last receive", "web.search", transient(503, 0), 4, OutcomeDeadLetter, "budget_exhausted"},
		{"503 past the last receive", "web.search", transient(503, 0), 5, OutcomeDeadLetter, "budget_exhausted"},
		{"until 2 at 1", "web.search", transient(503, 2), 1, OutcomeRetry, ""},
		{"until 2 at 2", "web.search", transient(503, 2), 2, OutcomeOK, ""},
		{"until 5 at 4", "web.search", transient(503, 5), 4, OutcomeDeadLetter, "budget_exhausted"},
		{"timeout after effect, mutating", "email.send", kind("timeout_after_effect"), 1, OutcomeDeadLetter, "effect_unknown"},
		{"timeout after effect, read-only", "web.search", kind("timeout_after_effect"), 1, OutcomeRetry, ""},
		{"auth inside budget", "sql.query", kind("auth", kv{"code", "AccessDenied"}), 3, OutcomeRetry, ""},
		{"auth last receive", "sql.query", kind("auth", kv{"code", "AccessDenied"}), 4, OutcomeDeadLetter, "auth_config"},
		{"dependency open inside budget", "web.search", kind("dependency_open"), 1, OutcomeRetry, ""},
		{"dependency open last receive", "web.search", kind("dependency_open"), 4, OutcomeDeadLetter, "dependency_open"},
		{"policy limit", "code.exec", kind("policy_limit"), 1, OutcomeDeadLetter, "policy_limit"},
		{"signature", "code.exec", kind("signature_invalid"), 1, OutcomeDeadLetter, "signature_invalid"},
		{"guardrail", "code.exec", kind("guardrail_reject"), 1, OutcomeDeadLetter, "guardrail_reject"},
		{"panic", "code.exec", kind("panic"), 1, OutcomeDeadLetter, "unclassified"},
		{"error", "code.exec", kind("error", kv{"error", "boom"}), 1, OutcomeDeadLetter, "unclassified"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, r, why := outcome(tt.tool, tt.fault, tt.receive)
			assert.Equal(t, tt.outcome, o)
			assert.Equal(t, tt.reason, string(r))
			assert.NotEmpty(t, why)
		})
	}
}

// TestMixBatch checks what a benchmark mix promises (benchmix.go): the ok
// share, every dead-letter reason, sizes, attribute and receive counts, and
// that render's own check (each poison body is what DecodeTask says) holds.
func TestMixBatch(t *testing.T) {
	tests := []struct {
		name  string
		n, ok int
	}{
		{"ten, 90 % ok", 10, 90},
		{"a thousand, 40 % ok", 1000, 40},
		{"all ok", 200, 100},
		{"no ok", 50, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := mixBatch(tt.n, tt.ok, 1)
			_, fx, err := sc.render()
			require.NoError(t, err)
			require.Len(t, fx.Records, tt.n)
			oks, reasons, attrs, receives := 0, map[string]bool{}, map[int]bool{}, map[int]bool{}
			for i, r := range sc.records {
				switch r.outcome {
				case OutcomeOK:
					oks++
					assert.True(t, len(r.body) >= 590 && len(r.body) <= 1700, "record %d: an ok body of %d bytes", i, len(r.body))
				case OutcomeDeadLetter:
					reasons[string(r.reason)] = true
				default:
					t.Errorf("record %d: outcome %s, want ok or dead_letter", i, r.outcome)
				}
				attrs[len(r.msgAttrs)] = true
				receives[r.receive] = true
			}
			assert.Equal(t, tt.n*tt.ok/100, oks)
			if tt.n-oks >= len(deadLetterKinds) {
				assert.Len(t, reasons, 12, "every dead-letter reason the worker gives: %v", reasons)
			}
			if tt.n >= 200 {
				assert.Len(t, attrs, 11, "0 to 10 attributes")
				assert.Len(t, receives, 5, "receive counts 1 to 5")
			}
		})
	}
	a, err := MixBatch(300, 90, 7)
	require.NoError(t, err)
	b, err := MixBatch(300, 90, 7)
	require.NoError(t, err)
	assert.Equal(t, a, b, "a mix is made from its seed alone")
	_, err = MixBatch(0, 90, 1)
	assert.Error(t, err)
}
