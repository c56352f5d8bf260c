package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentdlq/agentdlq/functions/sampleworker"
)

// projectRoot is the checkout that holds the working directory: the nearest
// parent with scripts/local.sh and go.mod, so that local commands work from
// any folder of it.
func projectRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if isFile(filepath.Join(dir, "scripts", "local.sh")) && isFile(filepath.Join(dir, "go.mod")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside an agentdlq checkout (no scripts/local.sh in this folder or any parent)")
		}
		dir = parent
	}
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// localStateDir is scripts/local.sh's state directory: AGENTDLQ_LOCAL_DIR,
// or .local at the project root.
func localStateDir() (string, error) {
	if d := os.Getenv("AGENTDLQ_LOCAL_DIR"); d != "" {
		return filepath.Abs(d)
	}
	root, err := projectRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, ".local"), nil
}

// localDependencies is the dependency health every local worker of this
// checkout reads.
func localDependencies() (sampleworker.DependencyDir, error) {
	dir, err := localStateDir()
	if err != nil {
		return sampleworker.DependencyDir{}, err
	}
	return sampleworker.DependencyDir{Dir: filepath.Join(dir, "dependencies")}, nil
}

func newDependencyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dependency down|up|list [NAME]",
		Short: "Take a sample dependency down or bring it back up for every local worker",
		Long: `The sample tools call named dependencies (a search API, a mail relay). A task
whose args.fault names one, {"retryable":true,"status":503,"dependency":"search-api"},
fails only while that dependency is down, so an outage can end: its dead letters
then redrive and succeed. The health lives under the local state directory
(.local/dependencies, or $AGENTDLQ_LOCAL_DIR/dependencies), read by every local
worker on its next receive.`,
		Example: `  agentdlq local dependency down search-api   # tasks naming it fail from now on
  agentdlq local dependency list              # which are down
  agentdlq local dependency up search-api     # the fix: they succeed again`,
	}
	set := func(down bool) *cobra.Command {
		verb, short := "up", "bring a dependency back up: tasks that name it succeed again"
		if down {
			verb, short = "down", "take a dependency down: tasks that name it fail until it is up"
		}
		return &cobra.Command{
			Use:     verb + " NAME",
			Short:   short,
			Example: "  agentdlq local dependency " + verb + " search-api",
			Args: func(_ *cobra.Command, args []string) error {
				if len(args) != 1 {
					return fmt.Errorf("name one dependency, as a task's args.fault.dependency names it (e.g. search-api): agentdlq local dependency %s NAME", verb)
				}
				return nil
			},
			RunE: func(c *cobra.Command, args []string) error {
				d, err := localDependencies()
				if err != nil {
					return withExit(2, err)
				}
				if err := sampleworker.CheckDependencyName(args[0]); err != nil {
					return withExit(2, err)
				}
				if err := d.Set(args[0], down); err != nil {
					return err
				}
				fmt.Fprintf(c.OutOrStdout(), "dependency %s is %s (%s)\n", args[0], verb, d.Dir)
				return nil
			},
		}
	}
	var out *output
	list := &cobra.Command{
		Use:     "list [-o table|json]",
		Short:   "list the dependencies that are down",
		Example: "  agentdlq local dependency list\n  agentdlq local dependency list -o json   # {\"down\":[…]}",
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			d, err := localDependencies()
			if err != nil {
				return withExit(2, err)
			}
			down, err := d.ListDown()
			if err != nil {
				return err
			}
			if out.JSON() {
				if down == nil {
					down = []string{}
				}
				return writeJSON(c.OutOrStdout(), map[string][]string{"down": down})
			}
			if len(down) == 0 {
				fmt.Fprintln(c.OutOrStdout(), "every dependency is up")
				return nil
			}
			fmt.Fprintf(c.OutOrStdout(), "down: %s\n", strings.Join(down, ", "))
			return nil
		},
	}
	out = addOutput(list, formatTable, formatJSON)
	cmd.AddCommand(set(true), set(false), list)
	return cmd
}
