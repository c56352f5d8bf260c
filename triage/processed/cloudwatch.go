package processed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/smithy-go"
)

// The worker's metric, as docs/wiring.md pins it (functions/batch's
// MetricNamespace and MetricProcessed, with the dimension set [Pipeline]).
const (
	Namespace       = "AgentDLQ"
	MetricProcessed = "Processed"
	DimPipeline     = "Pipeline"
)

// periodSeconds is the queries' period: a minute, the finest of standard
// resolution EMF metrics and the SLO's; summing every minute of the window
// needs no alignment of a longer period to the window.
const periodSeconds = 60

// maxPages bounds the NextToken loop (a week of minutes is one page of
// 100,800 datapoints at most; a service that keeps answering with a token
// must not keep triage waiting).
const maxPages = 20

// GetMetricDataAPI is what CloudWatch needs of the SDK client.
type GetMetricDataAPI interface {
	GetMetricData(ctx context.Context, params *cloudwatch.GetMetricDataInput, optFns ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error)
}

// CloudWatch reads the processed count from CloudWatch: the sum of the
// Processed metric of the pipeline over the period, a minute at a time.
// Its role needs cloudwatch:GetMetricData (no resource-level permission
// exists for it).
type CloudWatch struct {
	// API is required (cloudwatch.NewFromConfig).
	API GetMetricDataAPI
	// Logger is optional (default slog.Default()): a failed read's whole
	// error is logged; the error returned is worded for the report.
	Logger *slog.Logger
	// Timeout bounds the read, every page (default DefaultTimeout): the
	// triage Lambda reads it within the time it keeps for the report.
	Timeout time.Duration
}

// DefaultTimeout is CloudWatch.Timeout's default.
const DefaultTimeout = 10 * time.Second

// String says where the count is read, for the report.
func (CloudWatch) String() string {
	return "CloudWatch metric " + Namespace + "/" + MetricProcessed + " (" + DimPipeline + "), summed over the period"
}

// Query is the GetMetricData request of the pipeline's processed count
// between from and to: the Processed metric with the Pipeline dimension
// alone, summed a minute. CloudWatch rounds a start time of the last 15
// days down to the minute, so the period is counted to the minute.
func Query(pipeline string, from, to time.Time) *cloudwatch.GetMetricDataInput {
	return &cloudwatch.GetMetricDataInput{
		StartTime: aws.Time(from.UTC().Truncate(time.Minute)), EndTime: aws.Time(to.UTC()),
		ScanBy: types.ScanByTimestampAscending,
		MetricDataQueries: []types.MetricDataQuery{{
			Id: aws.String("processed"),
			MetricStat: &types.MetricStat{
				Metric: &types.Metric{
					Namespace: aws.String(Namespace), MetricName: aws.String(MetricProcessed),
					Dimensions: []types.Dimension{{Name: aws.String(DimPipeline), Value: aws.String(pipeline)}},
				},
				Period: aws.Int32(periodSeconds), Stat: aws.String("Sum"),
			},
			ReturnData: aws.Bool(true),
		}},
	}
}

// A ReadError is a read of the processed count that failed. Its text is
// fit for the report (an API error's code, not its message, which may name
// the caller's ARN); Err, logged by the source, is the whole error.
type ReadError struct {
	Msg string
	Err error
}

func (e *ReadError) Error() string { return e.Msg }
func (e *ReadError) Unwrap() error { return e.Err }

func readErr(err error, format string, args ...any) *ReadError {
	return &ReadError{Msg: fmt.Sprintf(format, args...), Err: err}
}

// Processed sums the pipeline's Processed datapoints between from and to,
// every page of them. No datapoint at all is 0 (see the package doc).
func (c CloudWatch) Processed(ctx context.Context, pipeline string, from, to time.Time) (int, error) {
	log := c.Logger
	if log == nil {
		log = slog.Default()
	}
	if c.API == nil {
		return 0, readErr(nil, "no CloudWatch client")
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	in := Query(pipeline, from, to)
	sum := 0.0
	for page := 0; ; page++ {
		if page == maxPages {
			return 0, readErr(nil, "CloudWatch GetMetricData still had more after %d pages", maxPages)
		}
		out, err := c.API.GetMetricData(ctx, in)
		if err != nil {
			log.WarnContext(ctx, "cloudwatch GetMetricData failed", "pipeline", pipeline, "error", err.Error())
			return 0, readErr(err, "CloudWatch GetMetricData: %s", reportable(err))
		}
		for _, r := range out.MetricDataResults {
			if aws.ToString(r.Id) != "processed" {
				continue
			}
			switch r.StatusCode {
			case types.StatusCodeForbidden, types.StatusCodeInternalError:
				return 0, readErr(nil, "CloudWatch GetMetricData answered %s", r.StatusCode)
			}
			for _, v := range r.Values {
				sum += v
			}
		}
		if aws.ToString(out.NextToken) == "" {
			break
		}
		in.NextToken = out.NextToken
	}
	if sum < 0 || sum > math.MaxInt32 {
		return 0, readErr(nil, "CloudWatch's sum %g is not a count", sum)
	}
	return int(math.Round(sum)), nil
}

// reportable is an SDK error in words fit for a report: the API error's
// code (its message may name the caller's ARN), else whether it timed out,
// else that the request did not complete.
func reportable(err error) string {
	var api smithy.APIError
	switch {
	case errors.As(err, &api) && strings.HasPrefix(api.ErrorCode(), "AccessDenied"):
		return api.ErrorCode() + " (the caller needs cloudwatch:GetMetricData)"
	case errors.As(err, &api):
		return api.ErrorCode()
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return "the request did not complete (network or endpoint; the triage log has the error)"
}
