package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// TODO: placeholder until its issue lands; replace this file.
func newBenchCmd(_ *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "bench",
		Short: "(not built yet)",
		RunE:  func(*cobra.Command, []string) error { return errors.New("bench is not built yet") },
	}
}
