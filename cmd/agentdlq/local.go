package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/spf13/cobra"

	"github.com/agentdlq/agentdlq/internal/awscfg"
	"github.com/agentdlq/agentdlq/local/runner"
	"github.com/agentdlq/agentdlq/local/topology"
)

func newLocalCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "local",
		Short: "Local AWS: start, stop and point a shell at the emulators; create the local topology",
		Long: `Local AWS on 127.0.0.1: fauxqs (SQS), dynalite (DynamoDB) and gofakes3 (S3).

  agentdlq local up       start the emulators and create the topology (make local-up)
  agentdlq local env      print the export lines for a shell (make -s local-env)
  agentdlq local down     stop the emulators (make local-down); an earlier run's
                          audit and reports under out/ go to out/previous/
  agentdlq local status   say what runs where
  agentdlq local init     create the topology on running emulators
  agentdlq local bench    the no-loss load bench (make bench-load)
  agentdlq local dependency down|up|list NAME   switch a sample dependency's health

up, env, down and status run the checkout's scripts/local.sh from any folder of it.`,
		Example: `  agentdlq local up && eval "$(agentdlq local env)"
  agentdlq local status
  agentdlq local down`,
	}
	for _, sub := range []struct{ name, short, example string }{
		{"up", "start the emulators and create the topology of every pipeline", "  agentdlq local up                        # as make local-up\n  AGENTDLQ_SQS_PORT=0 agentdlq local up     # on a free port"},
		{"env", "print the export lines that point a shell at the emulators", `  eval "$(agentdlq local env)"              # as eval "$(make -s local-env)"`},
		{"down", "stop the emulators and set out/'s audit and reports aside (out/previous/<UTC time>/)", "  agentdlq local down                      # as make local-down: the emulators keep nothing"},
		{"status", "say which emulators run, on which ports (exit 1 when one is stopped)", "  agentdlq local status"},
	} {
		cmd.AddCommand(&cobra.Command{
			Use:     sub.name,
			Short:   sub.short,
			Example: sub.example,
			Args:    cobra.NoArgs,
			RunE: func(c *cobra.Command, _ []string) error {
				if err := runLocalScript(c.Context(), sub.name, c.OutOrStdout(), c.ErrOrStderr()); err != nil {
					return err
				}
				if sub.name != "up" {
					return nil
				}
				return initFromScriptEnv(c.Context(), g)
			},
		})
	}
	cmd.AddCommand(newLoadBenchCmd(g), newDependencyCmd())
	cmd.AddCommand(&cobra.Command{
		Use:     "init",
		Short:   "create every pipeline's queues, the ledger table and the eval bucket on the running emulators",
		Example: `  eval "$(make -s local-env)" && agentdlq local init`,
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return initLocal(c.Context(), g, c.OutOrStdout())
		},
	})
	return cmd
}

// runLocalScript runs the checkout's scripts/local.sh (found from any folder
// of it) with the command's stdout and stderr.
func runLocalScript(ctx context.Context, sub string, stdout, stderr io.Writer) error {
	return runLocalScriptEnv(ctx, sub, stdout, stderr)
}

// runLocalScriptEnv is runLocalScript with env (KEY=value) added to this
// process's environment.
func runLocalScriptEnv(ctx context.Context, sub string, stdout, stderr io.Writer, env ...string) error {
	root, err := projectRoot()
	if err != nil {
		return withExit(2, err)
	}
	script := filepath.Join(root, "scripts", "local.sh")
	c := exec.CommandContext(ctx, script, sub)
	c.Stdout, c.Stderr = stdout, stderr
	if len(env) > 0 {
		c.Env = append(os.Environ(), env...)
	}
	if err := c.Run(); err != nil {
		return fmt.Errorf("%s %s: %w", script, sub, err)
	}
	return nil
}

// initFromScriptEnv points this process at the emulators just started (the
// env file scripts/local.sh wrote) and creates the topology.
func initFromScriptEnv(ctx context.Context, g *globalFlags) error {
	root, err := projectRoot()
	if err != nil {
		return withExit(2, err)
	}
	out, err := exec.CommandContext(ctx, filepath.Join(root, "scripts", "local.sh"), "env").Output()
	if err != nil {
		return fmt.Errorf("scripts/local.sh env: %w", err)
	}
	if err := runner.SetExports(string(out)); err != nil {
		return err
	}
	return initLocal(ctx, g, os.Stderr)
}

// initLocal creates the local topology of every pipeline of the definition:
// the hot queues and DLQs, the ledger table and the eval bucket.
func initLocal(ctx context.Context, g *globalFlags, w io.Writer) error {
	f, err := g.loadFile()
	if err != nil {
		return err
	}
	cfg, err := localConfig(ctx)
	if err != nil {
		return err
	}
	sqsc := sqs.NewFromConfig(cfg)
	for i := range f.Pipelines {
		p := &f.Pipelines[i]
		q, err := topology.Create(ctx, sqsc, p)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "pipeline %s: hot %s, dlq %s (maxReceiveCount %d)\n", p.Name, q.HotURL, q.DLQURL, p.MaxReceiveCount)
	}
	if err := topology.CreateLedgerTable(ctx, dynamodb.NewFromConfig(cfg), topology.LocalLedgerTable); err != nil {
		return err
	}
	if err := topology.CreateBucket(ctx, s3.NewFromConfig(cfg), topology.LocalEvalBucket); err != nil {
		return err
	}
	fmt.Fprintf(w, "ledger table %s, eval bucket %s\n", topology.LocalLedgerTable, topology.LocalEvalBucket)
	return nil
}

// localConfig loads the AWS config; with no credentials configured (a local
// shell), the emulators' dummy ones are used.
func localConfig(ctx context.Context) (aws.Config, error) {
	cfg, err := awscfg.Load(ctx)
	if err != nil {
		return aws.Config{}, fmt.Errorf("aws config: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	return cfg, nil
}
