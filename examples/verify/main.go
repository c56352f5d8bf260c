// Command verify is a platform team's `agentdlq ledger verify` in one page:
// the team's own read-only check of its mutating tool (payments.refund,
// the tool of examples/worker), registered on the tool, run by the
// agentdlq library over the pipeline's effect_unknown dead letters with the
// same owner gate and audit as the agentdlq CLI. Without -apply it only
// proposes; with it, the definite answers are reconciled.
//
//	go run . -pipeline payments -owner payments-oncall -why "INC-9: refunds API check" [-apply]
//
// It reads the stack outputs from the environment: AGENTDLQ_HOT_QUEUE_URL,
// AGENTDLQ_HOT_QUEUE_ARN, AGENTDLQ_DLQ_URL, AGENTDLQ_DLQ_ARN,
// AGENTDLQ_LEDGER_TABLE, AGENTDLQ_AUDIT_BUCKET (EvalBucketName), and
// TOOLS_URL, the team's tool API. Run it with the redrive role's credentials.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"text/tabwriter"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/agentdlq/agentdlq/events/agenttask"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/sdkhttp"
)

// verifyRefund asks the tool API, read only, what it holds for the
// idempotency key the worker sent with the refund: a refund (confirmed), a
// call it refused or never finished (no effect), or nothing at all
// (unknown: the call may never have reached it).
func verifyRefund(client *http.Client, toolsURL string) agenttask.Verifier {
	return func(ctx context.Context, c agenttask.Call) (agenttask.Verification, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, toolsURL+"/effects?idempotency_key="+url.QueryEscape(c.Key), nil)
		if err != nil {
			return agenttask.Verification{}, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return agenttask.Verification{}, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return agenttask.Verification{}, fmt.Errorf("tool API: %s", resp.Status)
		}
		var got struct {
			Calls    int    `json:"calls"`     // calls received for the key
			RefundID string `json:"refund_id"` // the refund made, if any
		}
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
			return agenttask.Verification{}, fmt.Errorf("tool API: %w", err)
		}
		switch {
		case got.RefundID != "":
			return agenttask.Verification{Verdict: agenttask.VerdictConfirmed, Receipt: got.RefundID,
				Evidence: fmt.Sprintf("tool API: a refund exists for the key (%d call(s) received)", got.Calls)}, nil
		case got.Calls > 0:
			return agenttask.Verification{Verdict: agenttask.VerdictNoEffect,
				Evidence: fmt.Sprintf("tool API: %d call(s) received for the key, no refund made", got.Calls)}, nil
		}
		return agenttask.Verification{Verdict: agenttask.VerdictUnknown, Evidence: "tool API: no call received for the key"}, nil
	}
}

// catalog is examples/worker's, with the verifier on the mutating tool.
func catalog(v agenttask.Verifier) agenttask.Catalog {
	return agenttask.Catalog{
		"crm.lookup":      {Name: "crm.lookup", Versions: "1"},
		"payments.refund": {Name: "payments.refund", Versions: "2", Mutates: true, Verify: v},
	}
}

func main() {
	name := flag.String("pipeline", "", "pipeline name (required)")
	defs := flag.String("config", "pipelines.json", "the pipeline definitions")
	owner := flag.String("owner", "", "the pipeline's owner (required)")
	why := flag.String("why", "", "why now: the incident (required)")
	apply := flag.Bool("apply", false, "reconcile the definite verdicts; without it nothing changes")
	flag.Parse()
	if err := run(context.Background(), *defs, *name, redrive.Who{Owner: *owner, Why: *why}, *apply); err != nil {
		fmt.Fprintln(os.Stderr, "verify:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, defs, name string, who redrive.Who, apply bool) error {
	f, err := pipeline.Load(defs)
	if err != nil {
		return err
	}
	p, err := f.Get(name)
	if err != nil {
		return err
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return err
	}
	sdkhttp.Apply(&cfg) // no lost receive (docs/local.md)
	env := os.Getenv
	r, err := redrive.New(redrive.Config{
		Pipeline: p,
		Queues: pipeline.Queues{HotURL: env("AGENTDLQ_HOT_QUEUE_URL"), HotARN: env("AGENTDLQ_HOT_QUEUE_ARN"),
			DLQURL: env("AGENTDLQ_DLQ_URL"), DLQARN: env("AGENTDLQ_DLQ_ARN"), FIFO: p.FIFO},
		SQS: sqs.NewFromConfig(cfg), STS: sts.NewFromConfig(cfg),
		Ledger:  ledger.NewDynamo(dynamodb.NewFromConfig(cfg), env("AGENTDLQ_LEDGER_TABLE")),
		Audit:   &audit.Auditor{Store: &audit.S3Store{API: s3.NewFromConfig(cfg), Bucket: env("AGENTDLQ_AUDIT_BUCKET")}},
		Catalog: catalog(verifyRefund(http.DefaultClient, env("TOOLS_URL"))),
	})
	if err != nil {
		return err
	}
	res, err := r.Verify(ctx, redrive.VerifyRequest{Who: who, Apply: apply})
	if res != nil {
		tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "KEY\tVERDICT\tRECEIPT\tEVIDENCE OR WHY SKIPPED\tRECONCILED")
		for _, k := range res.Keys {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s%s\t%s%s\n", k.Key, k.Verdict, k.Receipt, k.Evidence, k.Skipped, k.Reconciled, k.Refused)
		}
		if ferr := tw.Flush(); ferr != nil && err == nil {
			err = ferr // stdout failed: the table was not seen
		}
	}
	return err // a refusal (errors.Is redrive.ErrRefused), or a partial scan (triage.ErrScanPartial): rerun later
}
