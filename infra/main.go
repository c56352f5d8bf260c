// Command infra is the agentdlq CDK app: `cdk synth` and `cdk deploy` run it
// (cdk.json: "app": "go run ./infra"). It reads the CDK context, loads the
// pipeline definition file named by "agentdlq:pipelines" and synthesizes one
// environment-agnostic stack with the cdk-nag AwsSolutions checks applied.
// See package stack for the constructs and docs/deploying.md.
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/agentdlq/agentdlq/infra/stack"
)

func main() {
	defer jsii.Close()
	app := awscdk.NewApp(nil)
	stack.ApplyNag(app)
	if _, err := stack.FromContext(app); err != nil {
		fmt.Fprintln(os.Stderr, "agentdlq infra:", err)
		jsii.Close()
		os.Exit(1)
	}
	app.Synth(nil)
}
