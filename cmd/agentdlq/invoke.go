package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// TODO: placeholder until its issue lands; replace this file.
func newInvokeCmd(_ *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "invoke",
		Short: "(not built yet)",
		RunE:  func(*cobra.Command, []string) error { return errors.New("invoke is not built yet") },
	}
}
