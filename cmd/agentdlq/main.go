// Command agentdlq is the operator CLI: run the worker on an event file,
// benchmark it, run the local pipeline, triage a DLQ and redrive it.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs the command line args and returns the process exit code
// (exit.go: 0 done, 1 failed, 2 refused or bad input, 3 canary failed).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	c, err := root.ExecuteContextC(ctx)
	return reportExit(c, err, stdout, stderr)
}
