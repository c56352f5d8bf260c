package stack

import (
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// ApplyNag adds the cdk-nag AwsSolutions checks to every stack under scope as
// an aspect. Findings become error or warning annotations; `cdk synth` fails
// on an error, and the stack tests fail on any unsuppressed finding.
func ApplyNag(scope constructs.IConstruct) {
	awscdk.Aspects_Of(scope).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
}

// suppress records a cdk-nag suppression with its reason on one construct
// (and its children). appliesTo narrows it to findings of those resources or
// actions; an entry between slashes is a regular expression.
func suppress(c constructs.IConstruct, rule, reason string, appliesTo ...string) {
	s := &cdknag.NagPackSuppression{Id: jsii.String(rule), Reason: jsii.String(reason)}
	if len(appliesTo) > 0 {
		list := make([]any, 0, len(appliesTo))
		for _, a := range appliesTo {
			if len(a) > 1 && strings.HasPrefix(a, "/") && strings.HasSuffix(a, "/") {
				list = append(list, map[string]any{"regex": a + "g"})
				continue
			}
			list = append(list, a)
		}
		s.AppliesTo = &list
	}
	cdknag.NagSuppressions_AddResourceSuppressions(c, &[]*cdknag.NagPackSuppression{s}, jsii.Bool(true))
}
