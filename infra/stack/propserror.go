package stack

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// PropsError is one problem of the props that New, Add, NewPipeline or
// NewTriage were given: the field at fault, as the caller's Go code names it
// ("Props.RedrivePrincipals", "PipelineProps.WorkerAssetDir",
// "TriageProps.AssetDir"), the pipeline it concerns and what is wrong. The
// constructors return every problem at once (errors.Join); find one with
// errors.As.
type PropsError struct {
	// Field is the field at fault, with its struct: "Props.WorkerAssetDir".
	Field string
	// Pipeline is the pipeline concerned, "" when the problem is not one
	// pipeline's.
	Pipeline string
	// Err is what is wrong; it may wrap a cause (a file system error).
	Err error
}

func (e *PropsError) Error() string {
	if e.Pipeline != "" {
		return fmt.Sprintf("pipeline %q: %s: %v", e.Pipeline, e.Field, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Field, e.Err)
}

func (e *PropsError) Unwrap() error { return e.Err }

// propsErr is a PropsError of field, with a message.
func propsErr(field, pipelineName, format string, args ...any) *PropsError {
	return &PropsError{Field: field, Pipeline: pipelineName, Err: fmt.Errorf(format, args...)}
}

// The Lambda entries an adopter builds from its own module, as the errors
// name them (docs/deploying.md).
const (
	// workerPackage stands for the team's own worker (agentdlq's sample
	// worker is github.com/agentdlq/agentdlq/functions/sampleworker/lambda).
	workerPackage = "<your worker's main package>"
	// triagePackage is the triage Lambda's entry, which every stack deploys.
	triagePackage = "github.com/agentdlq/agentdlq/triage/lambda"
)

// buildCommand is the go build command that writes a Lambda entry's arm64
// bootstrap for provided.al2023 into dir, as docs/deploying.md gives it:
// the runtime's OS and architecture, no cgo, the lambda.norpc tag (the
// bootstrap speaks the Runtime API itself), a reproducible, stripped binary.
func buildCommand(dir, pkg string) string {
	return "GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -tags lambda.norpc -trimpath -ldflags='-s -w' -o " +
		filepath.Join(dir, "bootstrap") + " " + pkg
}

// checkAssetDir checks that a Lambda asset directory holds an executable
// named bootstrap, the entry point of the provided.al2023 runtime. field is
// the props field ("Props.WorkerAssetDir"); pkg the Lambda entry to build
// into it, for the error.
func checkAssetDir(field, dir, pkg string) *PropsError {
	if strings.TrimSpace(dir) == "" {
		return propsErr(field, "", "is required: the directory holding the Lambda's arm64 bootstrap, written by %s (docs/deploying.md)", buildCommand("DIR", pkg))
	}
	st, err := os.Stat(filepath.Join(dir, "bootstrap"))
	if err != nil {
		return &PropsError{Field: field, Err: fmt.Errorf("%q has no bootstrap: build it with %s (docs/deploying.md): %w", dir, buildCommand(dir, pkg), err)}
	}
	if st.IsDir() || st.Mode().Perm()&0o111 == 0 {
		return propsErr(field, "", "%q: bootstrap must be an executable file", dir)
	}
	return nil
}

// contextHints adds to each PropsError of err the CDK context key that sets
// its field in this repository's app (FromContext), and what writes the
// default asset directories.
func contextHints(err error) error {
	hints := map[string]string{
		"Props.RedrivePrincipals": "set it with the context " + CtxRedrivePrincipals + ", e.g. -c " + CtxRedrivePrincipals + "=%s=arn:aws:iam::111122223333:role/PlatformOncall",
		"Props.WorkerAssetDir":    "the context " + CtxWorkerAsset + " names it (default dist/worker, which `make build` writes)",
		"Props.TriageAssetDir":    "the context " + CtxTriageAsset + " names it (default dist/triage, which `make build` writes)",
		"Props.DeployRoleARN":     "the context " + CtxDeployRole + " sets it",
	}
	var all []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		all = j.Unwrap()
	} else {
		all = []error{err}
	}
	out := make([]error, 0, len(all))
	for _, e := range all {
		var pe *PropsError
		if errors.As(e, &pe) && hints[pe.Field] != "" {
			hint := hints[pe.Field]
			if strings.Contains(hint, "%s") {
				name := pe.Pipeline
				if name == "" {
					name = "PIPELINE"
				}
				hint = fmt.Sprintf(hint, name)
			}
			e = fmt.Errorf("%w (in this repository's app: %s)", e, hint)
		}
		out = append(out, e)
	}
	return errors.Join(out...)
}
