package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// TODO: placeholder until its issue lands; replace this file.
func newTriageCmd(_ *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "triage",
		Short: "(not built yet)",
		RunE:  func(*cobra.Command, []string) error { return errors.New("triage is not built yet") },
	}
}
