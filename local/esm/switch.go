package esm

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
)

// Switch is the local stand-in for the Enabled flag of a Lambda event source
// mapping: one file per hot queue under Dir, DIR/<queue name>.disabled,
// present while the mapping is disabled. It answers the two Lambda calls
// pause and resume make (ListEventSourceMappings by EventSourceArn,
// UpdateEventSourceMapping by UUID), and a local Mapping whose
// Config.Enabled is Switch.Enabled receives nothing while it is disabled.
type Switch struct {
	// Dir is required: where the .disabled files live (created on demand).
	Dir string
}

const localUUIDPrefix = "local:"

// queueName is the last element of a queue ARN (arn:aws:sqs:REGION:ACCOUNT:NAME).
func queueName(arn string) (string, error) {
	i := strings.LastIndexByte(arn, ':')
	name := arn[i+1:]
	if !strings.HasPrefix(arn, "arn:") || name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
		return "", fmt.Errorf("esm: %q is not a queue ARN", arn)
	}
	return name, nil
}

func (s Switch) file(name string) string { return filepath.Join(s.Dir, name+".disabled") }

// Enabled reports whether the mapping of the queue queueARN is enabled (an
// unreadable state reads as enabled: the local worker keeps working).
func (s Switch) Enabled(queueARN string) bool {
	name, err := queueName(queueARN)
	if err != nil {
		return true
	}
	_, err = os.Stat(s.file(name))
	return errors.Is(err, fs.ErrNotExist)
}

func (s Switch) state(name string) string {
	if _, err := os.Stat(s.file(name)); err == nil {
		return "Disabled"
	}
	return "Enabled"
}

// ListEventSourceMappings returns the one local mapping of EventSourceArn.
func (s Switch) ListEventSourceMappings(_ context.Context, in *lambda.ListEventSourceMappingsInput, _ ...func(*lambda.Options)) (*lambda.ListEventSourceMappingsOutput, error) {
	arn := aws.ToString(in.EventSourceArn)
	name, err := queueName(arn)
	if err != nil {
		return nil, err
	}
	return &lambda.ListEventSourceMappingsOutput{EventSourceMappings: []lambdatypes.EventSourceMappingConfiguration{{
		UUID: aws.String(localUUIDPrefix + name), EventSourceArn: aws.String(arn),
		FunctionArn: aws.String("local:agentdlq-work"), State: aws.String(s.state(name)),
	}}}, nil
}

// UpdateEventSourceMapping sets the Enabled flag of a local mapping.
func (s Switch) UpdateEventSourceMapping(_ context.Context, in *lambda.UpdateEventSourceMappingInput, _ ...func(*lambda.Options)) (*lambda.UpdateEventSourceMappingOutput, error) {
	name, ok := strings.CutPrefix(aws.ToString(in.UUID), localUUIDPrefix)
	if !ok || name == "" || strings.ContainsAny(name, `/\`) {
		return nil, fmt.Errorf("esm: no local event source mapping %q", aws.ToString(in.UUID))
	}
	if in.Enabled != nil {
		if *in.Enabled {
			if err := os.Remove(s.file(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("esm: %w", err)
			}
		} else {
			if err := os.MkdirAll(s.Dir, 0o755); err != nil {
				return nil, fmt.Errorf("esm: %w", err)
			}
			if err := os.WriteFile(s.file(name), nil, 0o644); err != nil {
				return nil, fmt.Errorf("esm: %w", err)
			}
		}
	}
	return &lambda.UpdateEventSourceMappingOutput{UUID: in.UUID, FunctionArn: aws.String("local:agentdlq-work"), State: aws.String(s.state(name))}, nil
}
