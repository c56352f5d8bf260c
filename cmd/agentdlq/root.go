package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/agentdlq/agentdlq/internal/awscfg"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive/audit"
)

// globalFlags are the flags every subcommand shares.
type globalFlags struct {
	configPath string
	// configFrom says where configPath came from (configFromFlag when
	// empty: a test's literal); searchedFrom is the folder the search for
	// pipelines.json started in, when it found none.
	configFrom   configSource
	searchedFrom string
	// outDir is the default root of local outputs (outRoot).
	outDir string
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
		Use:   "agentdlq",
		Short: "Drain AI-agent task queues: classify failures, dead-letter poison, triage and redrive",
		Long: `agentdlq drains AI-agent task queues: the worker classifies failures and
dead-letters poison with its reason; triage reads a DLQ; redrive moves dead
letters back, one class of cause at a time, gated and audited.

Conventions of every command:
  -o table|json|markdown   the result's format, where the command has them (its
                           help says which); --json is -o json. With -o json
                           an error is JSON too: {"error","code","exit_code"}.
  exit codes               0 done, 1 failed, 2 refused or bad input, 3 canary failed
  --config                 else $AGENTDLQ_CONFIG, else pipelines.json here or in a parent
  --profile, --region      the AWS profile and region, as in the AWS CLI
  --log-format, --verbose  logs on stderr: text on a terminal, JSON otherwise;
                           progress (info) only with --verbose`,
		Example: `  agentdlq triage --pipeline agent-tasks
  agentdlq redrive plan --pipeline agent-tasks --profile prod --region eu-west-1
  agentdlq redrive plan --pipeline agent-tasks -o json | jq '.groups[] | select(.may_redrive)'
  make demo                                   # the whole lifecycle on local emulators`,
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
		g.outDir = defaultOut
		if !c.Flags().Changed("config") {
			env := os.Getenv(envConfig)
			g.configPath, g.configFrom = findConfig(env)
			switch g.configFrom {
			case configFromSearch:
				// Found by searching: the outputs go beside it, so that an
				// incident's commands share one audit whatever folder of the
				// checkout they run from.
				g.outDir = filepath.Join(filepath.Dir(g.configPath), defaultOut)
			case configNotFound:
				g.searchedFrom = mustGetwd()
			}
		}
		c.SetContext(awscfg.WithOptions(c.Context(), awscfg.Options{Profile: g.profile, Region: g.region, Logger: sdkLogger{g}}))
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
		newCapacityCmd(g),
		newVersionCmd(),
		newPauseCmd(g, true),
		newPauseCmd(g, false),
		newBreakerCmd(g),
	)
	harden(root)
	return root
}

// defaultOut is the folder local outputs go to by default (see outRoot).
const defaultOut = "out"

// outHelp says where a default under outRoot is, for help texts:
// "default: out/<rest> beside the pipelines.json found, ./out/<rest> with --config or $AGENTDLQ_CONFIG".
func outHelp(rest string) string {
	p := defaultOut + "/" + rest
	return "default: " + p + " beside the pipelines.json found; ./" + p + " with --config or $AGENTDLQ_CONFIG"
}

// outRoot is the default root of every local output (the audit, triage
// reports, the console's reports, the demo's files): out in the folder of
// pipelines.json when the config was found by searching (findConfig), so
// that commands run from any folder of a checkout share one audit; ./out
// of the working directory when the config was given (--config or
// $AGENTDLQ_CONFIG: nothing is written next to a config in /etc). A flag
// given explicitly is used as given.
func (g *globalFlags) outRoot() string {
	if g.outDir == "" {
		return defaultOut
	}
	return g.outDir
}

// auditPath is a pipeline's default local audit file under outRoot (as
// audit.DefaultPath is under ./out).
func (g *globalFlags) auditPath(pipelineName string) string {
	return audit.Path(g.outRoot(), pipelineName)
}

// auditDest is the --audit value to open: the flag as given, else auditPath.
func (g *globalFlags) auditDest(flag, pipelineName string) string {
	if flag != "" {
		return flag
	}
	return g.auditPath(pipelineName)
}

// envConfig names the definition file when --config is not given.
const envConfig = "AGENTDLQ_CONFIG"

// configSource is where the definition file's path came from.
type configSource int

const (
	configFromFlag   configSource = iota // --config
	configFromEnv                        // $AGENTDLQ_CONFIG
	configFromSearch                     // pipelines.json here or in a parent
	configNotFound                       // the search found none
)

// findConfig is the definition file when --config is not given: env (the
// AGENTDLQ_CONFIG variable) when set, else pipelines.json in the working
// directory or its nearest parent that has one, else pipelines.json
// (configNotFound, whose absence loadFile reports with the search).
func findConfig(env string) (string, configSource) {
	if env != "" {
		return env, configFromEnv
	}
	dir, err := os.Getwd()
	if err != nil {
		return pipeline.DefaultFile, configNotFound
	}
	for {
		p := filepath.Join(dir, pipeline.DefaultFile)
		if isFile(p) {
			if rel, err := filepath.Rel(mustGetwd(), p); err == nil && !strings.HasPrefix(rel, "..") {
				return rel, configFromSearch
			}
			return p, configFromSearch
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return pipeline.DefaultFile, configNotFound
		}
		dir = parent
	}
}

// loadFile reads the definition file. A missing file is bad input that
// says where the file was looked for and how to name one: the search's
// folder and its parents, --config FILE, $AGENTDLQ_CONFIG.
func (g *globalFlags) loadFile() (*pipeline.File, error) {
	f, err := pipeline.Load(g.configPath)
	if err == nil {
		return f, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, withExit(exitRefused, err)
	}
	const how = "name one with --config FILE or $" + envConfig
	switch g.configFrom {
	case configNotFound:
		return nil, withExit(exitRefused, fmt.Errorf("no %s in %s or any folder above it: %s, or run from the folder that holds it", pipeline.DefaultFile, g.searchedFrom, how))
	case configFromEnv:
		return nil, withExit(exitRefused, fmt.Errorf("$%s=%s: no such file: set it to the pipeline definition file, or unset it to use the nearest %s", envConfig, g.configPath, pipeline.DefaultFile))
	}
	return nil, withExit(exitRefused, fmt.Errorf("--config %s: no such file: give the path of the pipeline definition file (%s)", g.configPath, pipeline.DefaultFile))
}

func mustGetwd() string {
	wd, _ := os.Getwd()
	return wd
}

// buildVersion is what `agentdlq version -o json` prints.
type buildVersion struct {
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
}

// readVersion is the module version and VCS revision of this build, from
// the build info (a go install of a tagged module, or a build in a checkout).
func readVersion() buildVersion {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return buildVersion{Version: "(unknown version)"}
	}
	v := buildVersion{Version: bi.Main.Version, Go: bi.GoVersion}
	if v.Version == "" {
		v.Version = "(devel)"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// version is readVersion in a line: "v1.2.3 (revision 0123456789ab, modified) go1.26.8".
func version() string {
	b := readVersion()
	v := b.Version
	if rev := b.Revision; rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		modified := ""
		if b.Modified {
			modified = ", modified"
		}
		v += " (revision " + rev + modified + ")"
	}
	if b.Go == "" {
		return v
	}
	return v + " " + b.Go
}

func newVersionCmd() *cobra.Command {
	var out *output
	c := &cobra.Command{
		Use:     "version [-o table|json]",
		Short:   "Print the version: the module version and VCS revision of this build",
		Example: "  agentdlq version\n  agentdlq --version\n  agentdlq version -o json   # {\"version\",\"revision\",\"modified\",\"go\"}",
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if out.JSON() {
				return writeJSON(c.OutOrStdout(), readVersion())
			}
			fmt.Fprintln(c.OutOrStdout(), "agentdlq", version())
			return nil
		},
	}
	out = addOutput(c, formatTable, formatJSON)
	return c
}

// loadPipeline reads the definition file and returns the named pipeline.
func (g *globalFlags) loadPipeline(name string) (*pipeline.Pipeline, error) {
	f, err := g.loadFile()
	if err != nil {
		return nil, err
	}
	p, err := f.Get(name)
	if err != nil {
		return nil, withExit(exitRefused, fmt.Errorf("--pipeline: %w", err))
	}
	return p, nil
}
