package stack

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/pipeline"
)

// TestPipelineValidation: invalid props fail at synth with a clear error, and
// nothing is created. The checks run before any construct exists, so the
// table needs no synthesis.
func TestPipelineValidation(t *testing.T) {
	require.True(t, fx.synthOK)
	worker := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(worker, "bootstrap"), []byte("#!/bin/sh\n"), 0o755))
	notExec := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(notExec, "bootstrap"), []byte("x"), 0o644))

	valid := func() pipeline.Pipeline { return fx.file.Pipelines[0] }
	app := awscdk.NewApp(nil)
	scope := awscdk.NewStack(app, jsii.String("Validation"), nil)
	ledger := awsdynamodb.Table_FromTableName(scope, jsii.String("L"), jsii.String("ledger"))
	bucket := awss3.Bucket_FromBucketName(scope, jsii.String("B"), jsii.String("bucket"))
	key := awskms.Key_FromKeyArn(scope, jsii.String("K"), jsii.String("arn:aws:kms:us-east-1:123456789012:key/00000000-0000-0000-0000-000000000000"))
	props := func(p pipeline.Pipeline) *PipelineProps {
		return &PipelineProps{Pipeline: &p, Ledger: ledger, Bucket: bucket, AlarmKey: key, WorkerAssetDir: worker,
			RedrivePrincipalARN: "arn:aws:iam::123456789012:role/oncall"}
	}
	before := len(*scope.Node().Children())

	tests := []struct {
		name  string
		props func() *PipelineProps
		want  []string // substrings of the error
	}{
		{"maxReceiveCount 1", func() *PipelineProps { p := valid(); p.MaxReceiveCount = 1; return props(p) },
			[]string{`pipeline "agent-tasks": max_receive_count 1 is outside 3..5`}},
		{"maxReceiveCount 10", func() *PipelineProps { p := valid(); p.MaxReceiveCount = 10; return props(p) },
			[]string{"max_receive_count 10 is outside 3..5"}},
		{"DLQ retention shorter than the source's", func() *PipelineProps {
			p := valid()
			p.RetentionHours, p.DLQRetentionHours = 96, 72
			return props(p)
		}, []string{"dlq_retention_hours 72 must exceed retention_hours 96"}},
		{"DLQ retention equal to the source's", func() *PipelineProps {
			p := valid()
			p.RetentionHours, p.DLQRetentionHours = 336, 336
			return props(p)
		}, []string{"dlq_retention_hours 336 must exceed retention_hours 336"}},
		{"missing owner", func() *PipelineProps { p := valid(); p.Owner = " "; return props(p) },
			[]string{"owner is required"}},
		{"visibility below six worker timeouts", func() *PipelineProps {
			p := valid()
			p.WorkerTimeoutSeconds, p.VisibilityTimeoutSeconds = 60, 300
			return props(p)
		}, []string{"at least six times worker_timeout_seconds"}},
		// The event source's safety nets: the worker never throttles itself,
		// and Lambda's provisioned mode rules hold before CloudFormation sees them.
		{"reserved concurrency below the maximum concurrency", func() *PipelineProps {
			p := valid()
			p.MaxConcurrency, p.ReservedConcurrency = 10, 5
			return props(p)
		}, []string{`pipeline "agent-tasks": reserved_concurrency 5 is below 10, the most invocations the event source can make at once (max_concurrency 10)`}},
		{"provisioned pollers with a maximum concurrency", func() *PipelineProps {
			p := valid()
			p.ProvisionedPollers = &pipeline.ProvisionedPollers{Minimum: 2, Maximum: 4}
			return props(p)
		}, []string{"max_concurrency 10 cannot go with provisioned_pollers"}},
		{"provisioned pollers above Lambda's maximum", func() *PipelineProps {
			p := valid()
			p.MaxConcurrency, p.ReservedConcurrency = 0, 0
			p.ProvisionedPollers = &pipeline.ProvisionedPollers{Minimum: 2, Maximum: 2001}
			return props(p)
		}, []string{"provisioned_pollers.maximum 2001 is outside Lambda's 2..2000"}},
		{"no pipeline", func() *PipelineProps { return &PipelineProps{} }, []string{"PipelineProps.Pipeline: is required"}},
		{"no ledger, bucket or alarm key", func() *PipelineProps {
			pp := props(valid())
			pp.Ledger, pp.Bucket, pp.AlarmKey = nil, nil, nil
			return pp
		}, []string{"PipelineProps.Ledger: is required", "PipelineProps.Bucket: is required", "PipelineProps.AlarmKey: is required"}},
		{"no worker asset", func() *PipelineProps { pp := props(valid()); pp.WorkerAssetDir = ""; return pp },
			[]string{`pipeline "agent-tasks": PipelineProps.WorkerAssetDir: is required`}},
		{"asset without bootstrap", func() *PipelineProps { pp := props(valid()); pp.WorkerAssetDir = t.TempDir(); return pp },
			[]string{"PipelineProps.WorkerAssetDir: ", "has no bootstrap: build it with GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -tags lambda.norpc -trimpath -ldflags='-s -w' -o ", "/bootstrap <your worker's main package> (docs/deploying.md)"}},
		{"bootstrap not executable", func() *PipelineProps { pp := props(valid()); pp.WorkerAssetDir = notExec; return pp },
			[]string{"bootstrap must be an executable file"}},
		{"no redrive principal", func() *PipelineProps { pp := props(valid()); pp.RedrivePrincipalARN = ""; return pp },
			[]string{"PipelineProps.RedrivePrincipalARN: is required"}},
		{"an account root as redrive principal", func() *PipelineProps {
			pp := props(valid())
			pp.RedrivePrincipalARN = "arn:aws:iam::123456789012:root"
			return pp
		}, []string{`PipelineProps.RedrivePrincipalARN: "arn:aws:iam::123456789012:root" is not an IAM role or user ARN`}},
		{"every problem at once", func() *PipelineProps {
			p := valid()
			p.MaxReceiveCount, p.Owner = 10, ""
			pp := props(p)
			pp.Ledger = nil
			return pp
		}, []string{"max_receive_count 10", "owner is required", "PipelineProps.Ledger: is required"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pp := tt.props()
			var orig pipeline.Pipeline
			if pp.Pipeline != nil {
				orig = *pp.Pipeline
			}
			p, err := NewPipeline(scope, "Invalid", pp)
			require.Error(t, err)
			assert.Nil(t, p)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
			notRepositorys(t, err)
			if pp.Pipeline != nil {
				assert.Equal(t, orig, *pp.Pipeline, "the caller's definition is not modified")
			}
			assert.Len(t, *scope.Node().Children(), before, "nothing was created")
		})
	}
}

func TestStackValidation(t *testing.T) {
	require.True(t, fx.synthOK)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bootstrap"), []byte("#!/bin/sh\n"), 0o755))
	base := func() *Props {
		return &Props{Pipelines: append([]pipeline.Pipeline(nil), fx.file.Pipelines...), WorkerAssetDir: dir, TriageAssetDir: dir}
	}
	tests := []struct {
		name   string
		mutate func(p *Props)
		want   []string
	}{
		{"no pipelines", func(p *Props) { p.Pipelines = nil }, []string{"Props.Pipelines: is empty"}},
		{"a pipeline twice", func(p *Props) { p.Pipelines = append(p.Pipelines, p.Pipelines[0]) }, []string{`pipeline "agent-tasks": Props.Pipelines: defines this pipeline twice`}},
		{"no triage asset", func(p *Props) { p.TriageAssetDir = filepath.Join(dir, "missing") }, []string{"Props.TriageAssetDir: ", "has no bootstrap: build it with GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -tags lambda.norpc", "/bootstrap github.com/agentdlq/agentdlq/triage/lambda"}},
		{"redrive principal of an unknown pipeline", func(p *Props) {
			p.RedrivePrincipals = map[string]string{"nope": "arn:aws:iam::123456789012:role/x"}
		}, []string{`Props.RedrivePrincipals: names pipeline "nope", which Props.Pipelines does not define`}},
		{"redrive principal that is not an ARN", func(p *Props) {
			p.RedrivePrincipals = map[string]string{"agent-tasks": "platform-oncall"}
		}, []string{`pipeline "agent-tasks": Props.RedrivePrincipals: "platform-oncall" is not an IAM role or user ARN`}},
		{"maxReceiveCount 10 in the file", func(p *Props) { p.Pipelines[1].MaxReceiveCount = 10 }, []string{`pipeline "agent-steps": max_receive_count 10`}},
		{"a pipeline without a redrive principal", func(p *Props) {
			p.RedrivePrincipals = map[string]string{"agent-tasks": "arn:aws:iam::123456789012:role/x"}
		}, []string{`pipeline "agent-steps": Props.RedrivePrincipals: has no redrive principal for this pipeline`, `map[string]string{"agent-steps": "arn:aws:iam::`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app := awscdk.NewApp(nil)
			p := base()
			tt.mutate(p)
			s, err := New(app, "Invalid", p)
			require.Error(t, err)
			assert.Nil(t, s)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
			notRepositorys(t, err)
			assert.Empty(t, *app.Node().Children(), "nothing was created")
		})
	}
}

// TestFromContext: the app reads cdk.json's context keys and loads the
// definition file it names; bad context values are clear errors.
func TestFromContext(t *testing.T) {
	require.True(t, fx.synthOK)
	tests := []struct {
		name string
		ctx  map[string]any
		want string
	}{
		{"missing definition file", map[string]any{CtxPipelines: filepath.Join(t.TempDir(), "none.json")}, "pipeline definition"},
		{"bad queue encryption", map[string]any{CtxQueueEncryption: "aes"}, `must be "sqs" or "kms"`},
		{"empty stack name", map[string]any{CtxStackName: ""}, "context agentdlq:stackName must be a non-empty string"},
		{"principals not an object", map[string]any{CtxRedrivePrincipals: "arn:aws:iam::123456789012:root"}, "must be an object"},
		{"principals as pairs (-c), with a bad ARN", map[string]any{CtxRedrivePrincipals: "agent-tasks=arn:aws:iam::123456789012:role/x,agent-steps=oncall", CtxPipelines: filepath.Join(fx.root, pipeline.DefaultFile)},
			`pipeline "agent-steps": Props.RedrivePrincipals: "oncall" is not an IAM role or user ARN`},
		{"principals as text that is neither", map[string]any{CtxRedrivePrincipals: "oncall"}, "pipeline=ARN"},
		{"principals as JSON text (-c), with a bad ARN", map[string]any{CtxRedrivePrincipals: `{"agent-tasks":"oncall"}`, CtxPipelines: filepath.Join(fx.root, pipeline.DefaultFile)},
			`pipeline "agent-tasks": Props.RedrivePrincipals: "oncall" is not an IAM role or user ARN (arn:aws:iam::ACCOUNT:role/NAME) (in this repository's app: set it with the context agentdlq:redrivePrincipals, e.g. -c agentdlq:redrivePrincipals=agent-tasks=arn:aws:iam::`},
		// The repository's app names its context keys and make build.
		{"no redrive principals", map[string]any{CtxPipelines: filepath.Join(fx.root, pipeline.DefaultFile), CtxWorkerAsset: fx.assets["worker"], CtxTriageAsset: fx.assets["triage"]},
			`Props.RedrivePrincipals: has no redrive principal for this pipeline: map its name to the IAM role or user ARN that alone may redrive it, e.g. RedrivePrincipals: map[string]string{"agent-steps": "arn:aws:iam::111122223333:role/PlatformOncall"} (in this repository's app: set it with the context agentdlq:redrivePrincipals, e.g. -c agentdlq:redrivePrincipals=agent-steps=arn:aws:iam::111122223333:role/PlatformOncall)`},
		{"no worker bootstrap", map[string]any{CtxPipelines: filepath.Join(fx.root, pipeline.DefaultFile), CtxWorkerAsset: t.TempDir(), CtxTriageAsset: fx.assets["triage"],
			CtxRedrivePrincipals: "agent-tasks=arn:aws:iam::123456789012:role/x,agent-steps=arn:aws:iam::123456789012:role/y"},
			"(in this repository's app: the context agentdlq:workerAsset names it (default dist/worker, which `make build` writes))"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app := awscdk.NewApp(&awscdk.AppProps{Context: &tt.ctx})
			_, err := FromContext(app)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// TestTriageChunks: the triage's environment holds every pipeline's
// definition, so pipelines are packed into as few functions as Lambda's 4 KB
// allows; a single definition too large for it is refused.
func TestTriageChunks(t *testing.T) {
	defs := func(n int, description string) []any {
		var out []any
		for i := range n {
			def := fx.file.Pipelines[i%len(fx.file.Pipelines)]
			def.Name = fmt.Sprintf("%s-%d", def.Name, i)
			def.Description = description
			out = append(out, def)
		}
		return out
	}
	tests := []struct {
		name string
		n    int
		want [][]int
	}{
		{"one", 1, [][]int{{0}}},
		{"the repository's two", 2, [][]int{{0, 1}}},
		{"three", 3, [][]int{{0, 1}, {2}}},
		{"seven", 7, [][]int{{0, 1}, {2, 3}, {4, 5}, {6}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := defs(tt.n, fx.file.Pipelines[0].Description)
			got, err := triageChunks(d)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			for _, chunk := range got {
				size := 0
				for _, i := range chunk {
					size += targetSize(d[i])
				}
				assert.Less(t, size, triageEnvLimit-400, "the targets and the other variables fit")
			}
		})
	}
	_, err := triageChunks(defs(1, strings.Repeat("x", 4000)))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "above Lambda's 4096-byte limit")
}

// notRepositorys fails when an error of the constructors speaks of this
// repository's app (its make targets, its CDK context) instead of the
// caller's props: an adopter's module has neither.
func notRepositorys(t *testing.T, err error) {
	t.Helper()
	for _, w := range []string{"make build", "-c ", "context agentdlq:", CtxRedrivePrincipals, CtxWorkerAsset, CtxTriageAsset, CtxDeployRole} {
		assert.NotContains(t, err.Error(), w)
	}
}

// TestPropsErrorNamesTheField: a problem of the props is a *PropsError that
// names the field and the pipeline, for a caller to find with errors.As.
func TestPropsErrorNamesTheField(t *testing.T) {
	require.True(t, fx.synthOK)
	err := (&Props{Pipelines: fx.file.Pipelines[:1], WorkerAssetDir: fx.assets["worker"], TriageAssetDir: t.TempDir()}).Validate()
	require.Error(t, err)
	var got []PropsError
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var pe *PropsError
		require.True(t, errors.As(e, &pe), "%v", e)
		got = append(got, PropsError{Field: pe.Field, Pipeline: pe.Pipeline})
	}
	assert.Equal(t, []PropsError{{Field: "Props.RedrivePrincipals", Pipeline: "agent-tasks"}, {Field: "Props.TriageAssetDir"}}, got)
	assert.ErrorIs(t, err, os.ErrNotExist, "the missing bootstrap's cause is kept")
}
