package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/agentdlq/agentdlq/pipeline"
)

// globalFlags are the flags every subcommand shares.
type globalFlags struct {
	configPath string
}

func newRootCmd() *cobra.Command {
	g := &globalFlags{}
	root := &cobra.Command{
		Use:           "agentdlq",
		Short:         "Drain AI-agent task queues: classify failures, dead-letter poison, triage and redrive",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&g.configPath, "config", pipeline.DefaultFile, "pipeline definition file")
	root.AddCommand(
		newInvokeCmd(g),
		newBenchCmd(g),
		newWorkCmd(g),
		newDemoCmd(g),
		newTriageCmd(g),
		newRedriveCmd(g),
		newLocalCmd(g),
		newLedgerCmd(g),
		newUICmd(g),
		newSendCmd(g),
	)
	return root
}

// loadPipeline reads the definition file and returns the named pipeline.
func (g *globalFlags) loadPipeline(name string) (*pipeline.Pipeline, error) {
	f, err := pipeline.Load(g.configPath)
	if err != nil {
		return nil, err
	}
	return f.Get(name)
}

// exitError carries a process exit code with its error.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// withExit wraps err so that main exits with code.
func withExit(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

func exitCode(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 1
}
