// Command cdk is a platform team's CDK app, in a module of its own, that adds
// one agentdlq pipeline to a stack it already has (a table and a bucket of
// its own) with one call, stack.Add. cdk-nag's AwsSolutions checks run over
// the whole app, the team's resources and agentdlq's alike.
//
//	cd examples/cdk
//	go test ./...   # builds the bootstraps as docs/deploying.md says, synthesizes offline, checks cdk-nag
//	./cdk.sh synth -c redrivePrincipal=arn:aws:iam::111122223333:role/OrdersOncall -c workerAsset=dist/worker -c triageAsset=dist/triage
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

func main() {
	if err := synth(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// synth synthesizes the app, and stops the jsii runtime before it returns.
func synth() error {
	defer jsii.Close()
	app := awscdk.NewApp(nil)
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
	context := func(key, def string) string {
		if v, ok := app.Node().TryGetContext(jsii.String(key)).(string); ok && v != "" {
			return v
		}
		return def
	}
	if _, err := NewOrders(app, "Orders", &OrdersProps{
		WorkerAssetDir:   context("workerAsset", "dist/worker"),
		TriageAssetDir:   context("triageAsset", "dist/triage"),
		RedrivePrincipal: context("redrivePrincipal", ""),
	}); err != nil {
		return err
	}
	app.Synth(nil)
	return nil
}
