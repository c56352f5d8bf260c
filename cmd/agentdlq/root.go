package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/agentdlq/agentdlq/internal/awscfg"
	"github.com/agentdlq/agentdlq/pipeline"
)

// globalFlags are the flags every subcommand shares.
type globalFlags struct {
	configPath string
	// profile and region choose the AWS config, as the AWS CLI's flags.
	profile, region string
	// logFormat is auto, json or text; verbose logs progress (info).
	logFormat string
	verbose   bool

	// stderr is the running command's stderr, where logs go.
	stderr io.Writer

	consoleMu sync.Mutex
	cons      *errConsole
}

func newRootCmd() *cobra.Command {
	g := &globalFlags{}
	root := &cobra.Command{
		Use:           "agentdlq",
		Short:         "Drain AI-agent task queues: classify failures, dead-letter poison, triage and redrive",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	pf := root.PersistentFlags()
	pf.StringVar(&g.configPath, "config", "", "pipeline definition file (default: $AGENTDLQ_CONFIG, else pipelines.json in this folder or the nearest parent)")
	pf.StringVar(&g.profile, "profile", "", "AWS named profile of the shared config and credentials files, as in the AWS CLI (default: $AWS_PROFILE)")
	pf.StringVar(&g.region, "region", "", "AWS region, as in the AWS CLI (default: $AWS_REGION, else the profile's)")
	pf.StringVar(&g.logFormat, "log-format", logAuto, "logs on stderr: auto (text on a terminal, JSON otherwise), json or text")
	pf.BoolVarP(&g.verbose, "verbose", "v", false, "log progress (info), not only warnings and errors")
	root.Version = version()
	root.SetVersionTemplate("agentdlq {{.Version}}\n")
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error {
		g.stderr = c.ErrOrStderr()
		if err := checkLogFormat(g.logFormat); err != nil {
			return badUsage(c, err)
		}
		if !c.Flags().Changed("config") {
			g.configPath = findConfig(os.Getenv("AGENTDLQ_CONFIG"))
		}
		c.SetContext(awscfg.WithOptions(c.Context(), awscfg.Options{Profile: g.profile, Region: g.region}))
		return nil
	}
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
		newVersionCmd(),
		newPauseCmd(g, true),
		newPauseCmd(g, false),
	)
	harden(root)
	return root
}

// findConfig is the definition file when --config is not given: env (the
// AGENTDLQ_CONFIG variable) when set, else pipelines.json in the working
// directory or its nearest parent that has one, else pipelines.json (whose
// absence Load reports).
func findConfig(env string) string {
	if env != "" {
		return env
	}
	dir, err := os.Getwd()
	if err != nil {
		return pipeline.DefaultFile
	}
	for {
		p := filepath.Join(dir, pipeline.DefaultFile)
		if isFile(p) {
			if rel, err := filepath.Rel(mustGetwd(), p); err == nil && !strings.HasPrefix(rel, "..") {
				return rel
			}
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return pipeline.DefaultFile
		}
		dir = parent
	}
}

func mustGetwd() string {
	wd, _ := os.Getwd()
	return wd
}

// version is the module version and VCS revision of this build, from the
// build info (a go install of a tagged module, or a build in a checkout).
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown version)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = ", modified"
			}
		}
	}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		v += " (revision " + rev + modified + ")"
	}
	return v + " " + bi.GoVersion
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the version: the module version and VCS revision of this build",
		Example: "  agentdlq version\n  agentdlq --version",
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			fmt.Fprintln(c.OutOrStdout(), "agentdlq", version())
			return nil
		},
	}
}

// loadPipeline reads the definition file and returns the named pipeline.
func (g *globalFlags) loadPipeline(name string) (*pipeline.Pipeline, error) {
	f, err := pipeline.Load(g.configPath)
	if err != nil {
		return nil, err
	}
	return f.Get(name)
}
