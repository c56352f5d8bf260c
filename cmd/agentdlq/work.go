package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// TODO: placeholder until its issue lands; replace this file.
func newWorkCmd(_ *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "work",
		Short: "(not built yet)",
		RunE:  func(*cobra.Command, []string) error { return errors.New("work is not built yet") },
	}
}
