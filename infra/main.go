// Command infra is the agentdlq CDK app: `cdk synth` and `cdk deploy` run it
// (cdk.json: "app": "go run ./infra"). It reads the CDK context, loads the
// pipeline definition file named by "agentdlq:pipelines" and synthesizes one
// environment-agnostic stack with the cdk-nag AwsSolutions checks applied.
// See package stack for the constructs and docs/deploying.md for building
// the Lambda bootstraps and deploying from a module of your own.
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/agentdlq/agentdlq/infra/stack"
)

func main() {
	if err := synth(); err != nil {
		fmt.Fprintln(os.Stderr, "agentdlq infra:", err)
		os.Exit(1)
	}
}

// synth synthesizes the app, and stops the jsii runtime before it returns.
func synth() error {
	defer jsii.Close()
	app := awscdk.NewApp(nil)
	stack.ApplyNag(app)
	if _, err := stack.FromContext(app); err != nil {
		return err
	}
	app.Synth(nil)
	return nil
}
