package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// TODO: placeholder until its issue lands; replace this file.
func newDemoCmd(_ *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "(not built yet)",
		RunE:  func(*cobra.Command, []string) error { return errors.New("demo is not built yet") },
	}
}
