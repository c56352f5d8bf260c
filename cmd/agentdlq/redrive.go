package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// TODO: placeholder until its issue lands; replace this file.
func newRedriveCmd(_ *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "redrive",
		Short: "(not built yet)",
		RunE:  func(*cobra.Command, []string) error { return errors.New("redrive is not built yet") },
	}
}
