package processed

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/functions/batch"
	"github.com/agentdlq/agentdlq/triage"
)

// fakeCW answers GetMetricData with its pages in turn, recording each input.
type fakeCW struct {
	pages []*cloudwatch.GetMetricDataOutput
	err   error
	ins   []cloudwatch.GetMetricDataInput
}

func (f *fakeCW) GetMetricData(_ context.Context, in *cloudwatch.GetMetricDataInput, _ ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error) {
	f.ins = append(f.ins, *in)
	if f.err != nil {
		return nil, f.err
	}
	if len(f.ins) > len(f.pages) {
		return nil, errors.New("fake: no more pages")
	}
	return f.pages[len(f.ins)-1], nil
}

func page(next string, values ...float64) *cloudwatch.GetMetricDataOutput {
	out := &cloudwatch.GetMetricDataOutput{MetricDataResults: []types.MetricDataResult{{Id: aws.String("processed"), Values: values, StatusCode: types.StatusCodeComplete}}}
	if next != "" {
		out.NextToken, out.MetricDataResults[0].StatusCode = aws.String(next), types.StatusCodePartialData
	}
	return out
}

var (
	quiet = slog.New(slog.DiscardHandler)
	from  = time.Date(2026, 12, 7, 5, 17, 34, 0, time.UTC)
	to    = from.Add(time.Hour)
)

// TestTheWorkersMetric: the names are those the worker publishes.
func TestTheWorkersMetric(t *testing.T) {
	t.Parallel()
	assert.Equal(t, batch.MetricNamespace, Namespace)
	assert.Equal(t, batch.MetricProcessed, MetricProcessed)
}

// TestQuery: the Processed metric of the pipeline, on the dimension set
// [Pipeline] alone (the worker's), summed a minute, over the period to the minute.
func TestQuery(t *testing.T) {
	t.Parallel()
	in := Query("agent-tasks", from, to)
	assert.Equal(t, time.Date(2026, 12, 7, 5, 17, 0, 0, time.UTC), *in.StartTime, "to the minute, as CloudWatch rounds it")
	assert.Equal(t, to, *in.EndTime)
	require.Len(t, in.MetricDataQueries, 1)
	q := in.MetricDataQueries[0]
	assert.Equal(t, "processed", *q.Id)
	assert.True(t, *q.ReturnData)
	require.NotNil(t, q.MetricStat)
	assert.Equal(t, "AgentDLQ", *q.MetricStat.Metric.Namespace)
	assert.Equal(t, "Processed", *q.MetricStat.Metric.MetricName)
	require.Len(t, q.MetricStat.Metric.Dimensions, 1)
	assert.Equal(t, "Pipeline", *q.MetricStat.Metric.Dimensions[0].Name)
	assert.Equal(t, "agent-tasks", *q.MetricStat.Metric.Dimensions[0].Value)
	assert.Equal(t, int32(60), *q.MetricStat.Period)
	assert.Equal(t, "Sum", *q.MetricStat.Stat)
}

func TestCloudWatchSumsEveryPage(t *testing.T) {
	t.Parallel()
	cw := &fakeCW{pages: []*cloudwatch.GetMetricDataOutput{page("t1", 3, 4), page("t2", 10), page("", 0, 2.0000001)}}
	n, err := CloudWatch{API: cw, Logger: quiet}.Processed(t.Context(), "agent-tasks", from, to)
	require.NoError(t, err)
	assert.Equal(t, 19, n)
	require.Len(t, cw.ins, 3)
	assert.Nil(t, cw.ins[0].NextToken)
	assert.Equal(t, "t1", *cw.ins[1].NextToken)
	assert.Equal(t, "t2", *cw.ins[2].NextToken)
	assert.Equal(t, "agent-tasks", *cw.ins[2].MetricDataQueries[0].MetricStat.Metric.Dimensions[0].Value, "the same query, paged")
}

// TestCloudWatchNoDatapointsIsZero: no invocation in the period wrote a
// document (see the package doc), so nothing was processed.
func TestCloudWatchNoDatapointsIsZero(t *testing.T) {
	t.Parallel()
	n, err := CloudWatch{API: &fakeCW{pages: []*cloudwatch.GetMetricDataOutput{page("")}}, Logger: quiet}.Processed(t.Context(), "agent-tasks", from, to)
	require.NoError(t, err)
	assert.Zero(t, n)
}

func TestCloudWatchErrorsAreFitForTheReport(t *testing.T) {
	t.Parallel()
	arn := "arn:aws:sts::123456789012:assumed-role/triage/fn"
	denied := &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "User: " + arn + " is not authorized to perform: cloudwatch:GetMetricData"}
	forbidden := &cloudwatch.GetMetricDataOutput{MetricDataResults: []types.MetricDataResult{{Id: aws.String("processed"), StatusCode: types.StatusCodeForbidden}}}
	tests := []struct {
		name string
		cw   *fakeCW
		want string
	}{
		{"access denied", &fakeCW{err: denied}, "CloudWatch GetMetricData: AccessDeniedException (the caller needs cloudwatch:GetMetricData)"},
		{"network", &fakeCW{err: errors.New("dial tcp 10.0.0.1:443: i/o timeout")}, "CloudWatch GetMetricData: the request did not complete (network or endpoint; the triage log has the error)"},
		{"timed out", &fakeCW{err: context.DeadlineExceeded}, "CloudWatch GetMetricData: timed out"},
		{"a result forbidden", &fakeCW{pages: []*cloudwatch.GetMetricDataOutput{forbidden}}, "CloudWatch GetMetricData answered Forbidden"},
		{"pages without end", &fakeCW{pages: endless()}, "CloudWatch GetMetricData still had more after 20 pages"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := CloudWatch{API: tt.cw, Logger: quiet}.Processed(t.Context(), "agent-tasks", from, to)
			require.Error(t, err)
			assert.Equal(t, tt.want, err.Error())
			assert.NotContains(t, err.Error(), "123456789012")
			var re *ReadError
			assert.ErrorAs(t, err, &re)
		})
	}
}

func endless() []*cloudwatch.GetMetricDataOutput {
	out := make([]*cloudwatch.GetMetricDataOutput, maxPages+1)
	for i := range out {
		out[i] = page("more", 1)
	}
	return out
}

// Both sources are triage's.
var (
	_ triage.ProcessedSource = CloudWatch{}
	_ triage.ProcessedSource = EMFFile{}
)

// blockingCW answers only when its context ends.
type blockingCW struct{}

func (blockingCW) GetMetricData(ctx context.Context, _ *cloudwatch.GetMetricDataInput, _ ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestCloudWatchTimeout: a CloudWatch that does not answer cannot hold the
// triage past the source's Timeout.
func TestCloudWatchTimeout(t *testing.T) {
	t.Parallel()
	_, err := CloudWatch{API: blockingCW{}, Logger: quiet, Timeout: time.Millisecond}.Processed(t.Context(), "agent-tasks", from, to)
	require.Error(t, err)
	assert.Equal(t, "CloudWatch GetMetricData: timed out", err.Error())
}
