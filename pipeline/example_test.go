package pipeline_test

import (
	"fmt"

	"github.com/agentdlq/agentdlq/pipeline"
)

// Parse reads a definition (pipeline.Load reads it from a file), applies the
// defaults and validates it; what it returns is what the CDK app deploys and
// the local runner runs.
func ExampleParse() {
	f, err := pipeline.Parse([]byte(`{
	  "version": 1,
	  "pipelines": [{"name": "agent-emails", "owner": "comms-team", "max_receive_count": 3, "worker_timeout_seconds": 60}]
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := f.Get("agent-emails")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.HotQueueName(), p.DLQName(), p.MaxReceiveCount)
	fmt.Println("visibility", p.VisibilityTimeout(), "retention", p.Retention(), "dlq retention", p.DLQRetention())
	// Output:
	// agent-emails agent-emails-dlq 3
	// visibility 6m0s retention 96h0m0s dlq retention 336h0m0s
}

// A definition with problems is refused with every problem at once, each
// naming its pipeline and field; nothing is half-applied.
func ExampleParse_invalid() {
	_, err := pipeline.Parse([]byte(`{
	  "version": 1,
	  "pipelines": [{"name": "agent-emails", "max_receive_count": 9}]
	}`))
	fmt.Println(err)
	// Output:
	// pipeline "agent-emails": owner is required: the named owner is the only one who may redrive
	// pipeline "agent-emails": max_receive_count 9 is outside 3..5: fewer cannot ride out a transient failure, more burn invocations on poison
}
