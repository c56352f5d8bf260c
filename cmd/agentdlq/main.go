// Command agentdlq is the operator CLI: run the worker on an event file,
// benchmark it, run the local pipeline, triage a DLQ and redrive it.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRootCmd()
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "agentdlq:", err)
		os.Exit(exitCode(err))
	}
}
