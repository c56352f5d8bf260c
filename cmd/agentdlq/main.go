// Command agentdlq is the operator CLI: run the worker on an event file,
// benchmark it, run the local pipeline, triage a DLQ and redrive it.
package main

import (
	"context"
	"fmt"
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
// Output that could not be written to stdout (a closed pipe, a full disk)
// makes a command that succeeded exit 1, saying so on stderr: the commands
// write their output unchecked, through a writer that keeps the first error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	out := &checkedWriter{w: stdout}
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(out)
	root.SetErr(stderr)
	c, err := root.ExecuteContextC(ctx)
	code := reportExit(c, err, out, stderr)
	if out.err != nil && code == 0 {
		fmt.Fprintln(stderr, "agentdlq: writing the output:", out.err)
		return 1
	}
	return code
}

// checkedWriter writes to w until a write fails, and keeps that first
// error: later writes are not tried and return it.
type checkedWriter struct {
	w   io.Writer
	err error
}

func (c *checkedWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.err = err
	return n, err
}
