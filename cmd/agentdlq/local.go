package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// TODO: placeholder until its issue lands; replace this file.
func newLocalCmd(_ *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "local",
		Short: "(not built yet)",
		RunE:  func(*cobra.Command, []string) error { return errors.New("local is not built yet") },
	}
}
