package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/internal/awscfg"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
)

// runArgs runs the whole CLI as main does (run) and returns its stdout,
// stderr and exit code.
func runArgs(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), append([]string{"--config", filepath.Join("..", "..", pipeline.DefaultFile)}, args...), &out, &errb)
	return out.String(), errb.String(), code
}

func TestExitCodes(t *testing.T) {
	auditFile := filepath.Join(t.TempDir(), "audit.jsonl")
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string // a part of stderr
	}{
		{"unknown command", []string{"bogus"}, 2, `unknown command "bogus" for "agentdlq"`},
		{"unknown command with a suggestion", []string{"redriv"}, 2, "Did you mean this?\n\tredrive"},
		{"unknown redrive subcommand", []string{"redrive", "bogus"}, 2, `unknown command "bogus" for "agentdlq redrive"`},
		{"misspelt redrive subcommand", []string{"redrive", "plna"}, 2, "Did you mean this?\n\tplan"},
		{"unknown local subcommand", []string{"local", "bogus"}, 2, `for "agentdlq local"`},
		{"unknown ledger subcommand", []string{"ledger", "gte"}, 2, "Did you mean this?\n\tget"},
		{"dependency without a name", []string{"local", "dependency", "up"}, 2, "name one dependency, as a task's args.fault.dependency names it (e.g. search-api): agentdlq local dependency up NAME"},
		{"unknown dependency subcommand", []string{"local", "dependency", "sideways"}, 2, `for "agentdlq local dependency"`},
		{"unknown flag", []string{"redrive", "plan", "--bogus"}, 2, "unknown flag: --bogus"},
		{"bad -o", []string{"redrive", "plan", "--pipeline", "agent-tasks", "-o", "yaml"}, 2, `-o "yaml" is not an output format of this command: use one of -o table|json|markdown`},
		{"bad -o of send", []string{"send", "--pipeline", "agent-tasks", "-o", "xml", "f.jsonl"}, 2, "is not an output format"},
		{"markdown where a command has none", []string{"redrive", "start", "-o", "markdown"}, 2, "use one of -o table|json"},
		{"--json and --markdown", []string{"triage", "--json", "--markdown"}, 2, "agentdlq: --json and --markdown choose different formats (json, markdown): use one of -o table|json|markdown\n"},
		{"bad --log-format", []string{"--log-format", "xml", "version"}, 2, `--log-format "xml"`},
		{"missing argument", []string{"send", "--pipeline", "agent-tasks"}, 2, "accepts 1 arg(s)"},
		{"missing required flag", []string{"send", "f.jsonl"}, 2, `required flag(s) "pipeline" not set`},
		{"stray argument", []string{"version", "extra"}, 2, "extra"},
		{"refused", []string{"redrive", "plan", "--pipeline", "nope", "--audit", auditFile}, 2, `unknown pipeline "nope"`},
		{"refused, the flag named", []string{"redrive", "start", "--pipeline", "agent-tasks", "--why", "x", "--override", "policy_limit=", "--audit", auditFile}, 2, `refused (bad_input): --override "policy_limit="`},
		{"bad input", []string{"triage"}, 2, "--pipeline is required"},
		{"help of an unknown command", []string{"help", "redrive", "bogus"}, 2, `unknown command "bogus" for "agentdlq redrive"`},
		{"help of a command", []string{"help", "redrive", "plan"}, 0, ""},
		{"bare parent prints its help", []string{"redrive"}, 0, ""},
		{"version", []string{"version"}, 0, ""},
		{"--version", []string{"--version"}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runArgs(t, tt.args...)
			assert.Equal(t, tt.code, code, "stdout %q stderr %q", stdout, stderr)
			assert.Contains(t, stderr, tt.stderr)
			if tt.code == 2 && !strings.Contains(tt.name, "refused") && tt.name != "bad input" {
				assert.Empty(t, stdout, "bad input prints no help and no result")
				assert.Regexp(t, `Run 'agentdlq[a-z ]*--help' for usage\.`, stderr)
			}
		})
	}
	stdout, _, _ := runArgs(t, "redrive")
	assert.Contains(t, stdout, "Available Commands:", "a bare parent command prints its help, as kubectl and gh do")
	stdout, _, _ = runArgs(t, "version")
	assert.Regexp(t, `^agentdlq \S`, stdout)
}

func TestClassify(t *testing.T) {
	tests := []struct {
		err  error
		code string
		exit int
	}{
		{&redrive.Refusal{Code: redrivetype.CodeOwner, Reason: "x"}, "owner_mismatch", 2},
		{fmt.Errorf("select: %w", &redrive.Refusal{Code: redrivetype.CodeForbidden, Reason: "x"}), "reason_not_redrivable", 2},
		{withExit(2, &redrive.Refusal{Code: redrivetype.CodeDLQMissing, Reason: "x"}), "dlq_missing", 2},
		{fmt.Errorf("%w: 1 of 1 dead-lettered again", redrive.ErrCanaryFailed), "canary_failed", 3},
		{withExit(3, errors.New("canary")), "canary_failed", 3},
		{withExit(2, errors.New("--pipeline is required")), "bad_input", 2},
		{errors.New(`required flag(s) "pipeline" not set`), "bad_input", 2},
		{errors.New("throttled"), "failed", 1},
		{fmt.Errorf("scan: %w", context.Canceled), "interrupted", 1},
		// A partial scan is not the operator's fault (exit 2) but the command's
		// unfinished job: exit 1, with a code of its own, never nothing_selected.
		{&redrivetype.PartialError{Seen: 0, Depth: 3}, "scan_partial", 1},
		{withResult(&redrivetype.PartialError{Seen: 1, Depth: 3}, struct{}{}), "scan_partial", 1},
	}
	for _, tt := range tests {
		code, exit := classify(tt.err)
		assert.Equal(t, tt.code, code, "%v", tt.err)
		assert.Equal(t, tt.exit, exit, "%v", tt.err)
	}
	code, exit := classify(nil)
	assert.Equal(t, "", code)
	assert.Equal(t, 0, exit)
}

func TestJSONErrors(t *testing.T) {
	auditFile := filepath.Join(t.TempDir(), "audit.jsonl")
	for _, flag := range [][]string{{"-o", "json"}, {"--json"}, {"--output=json"}} {
		stdout, _, code := runArgs(t, append([]string{"redrive", "plan", "--pipeline", "nope", "--audit", auditFile}, flag...)...)
		assert.Equal(t, 2, code)
		var je struct {
			Error    string `json:"error"`
			Code     string `json:"code"`
			ExitCode int    `json:"exit_code"`
		}
		require.NoError(t, json.Unmarshal([]byte(stdout), &je), "with %v a refusal is JSON on stdout: %q", flag, stdout)
		assert.Equal(t, "bad_input", je.Code)
		assert.Equal(t, 2, je.ExitCode)
		assert.Contains(t, je.Error, `unknown pipeline "nope"`)
	}
	// A refusal code reaches the JSON as it is; <, > and & are not escaped.
	c := &cobra.Command{Use: "x"}
	o := addOutput(c, formatTable, formatJSON)
	require.NoError(t, o.Set("json"))
	var out, errb bytes.Buffer
	exit := reportExit(c, &redrive.Refusal{Code: redrivetype.CodeWhy, Reason: "--why <text> & more"}, &out, &errb)
	assert.Equal(t, 2, exit)
	assert.Empty(t, errb.String())
	assert.Contains(t, out.String(), `"error": "refused (why_missing): --why <text> & more"`)
	assert.Contains(t, out.String(), `"code": "why_missing"`)
	assert.NotContains(t, out.String(), `\u003c`)
	// A result that comes with the error is in the same document.
	out.Reset()
	exit = reportExit(c, withResult(fmt.Errorf("%w: dead-lettered again", redrive.ErrCanaryFailed), &redrive.SelectResult{Seen: 7, Moved: 1}), &out, &errb)
	assert.Equal(t, 3, exit)
	var doc struct {
		Code   string                `json:"code"`
		Result *redrive.SelectResult `json:"result"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc))
	assert.Equal(t, "canary_failed", doc.Code)
	require.NotNil(t, doc.Result)
	assert.Equal(t, 7, doc.Result.Seen)
	// Without -o json the error is text on stderr.
	out.Reset()
	errb.Reset()
	require.NoError(t, o.Set("table"))
	exit = reportExit(c, errors.New("boom"), &out, &errb)
	assert.Equal(t, 1, exit)
	assert.Empty(t, out.String())
	assert.Equal(t, "agentdlq: boom\n", errb.String())
}

func TestOutputFlag(t *testing.T) {
	parse := func(formats []format, args ...string) (*output, error) {
		c := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
		o := addOutput(c, formats...)
		return o, c.ParseFlags(args)
	}
	all := []format{formatTable, formatJSON, formatMarkdown}
	for _, tt := range []struct {
		args []string
		want format
	}{
		{nil, formatTable},
		{[]string{"-o", "json"}, formatJSON},
		{[]string{"--json"}, formatJSON},
		{[]string{"--json=true"}, formatJSON},
		{[]string{"--output", "JSON"}, formatJSON},
		{[]string{"-o", "markdown"}, formatMarkdown},
		{[]string{"--markdown"}, formatMarkdown},
		{[]string{"-o", "text"}, formatTable},
		{[]string{"-o", "json", "--json"}, formatJSON},
		{[]string{"-o", "table", "-o", "json"}, formatJSON},
		{[]string{"-o", "json", "--json=false"}, formatTable},
	} {
		o, err := parse(all, tt.args...)
		require.NoError(t, err, "%v", tt.args)
		assert.Equal(t, tt.want, o.format, "%v", tt.args)
	}
	_, err := parse([]format{formatTable, formatJSON}, "-o", "markdown")
	assert.ErrorContains(t, err, `-o "markdown" is not an output format of this command: use one of -o table|json`)
	_, err = parse([]format{formatTable, formatJSON}, "--markdown")
	assert.ErrorContains(t, err, "unknown flag: --markdown", "no --markdown alias where there is no markdown")
	_, err = parse(all, "-o", "yaml")
	assert.Error(t, err)
	_, err = parse(all, "--json", "--markdown")
	assert.ErrorContains(t, err, "--json and --markdown choose different formats (json, markdown): use one of -o table|json|markdown")
	_, err = parse(all, "--json", "-o", "table")
	assert.ErrorContains(t, err, "--json and -o choose different formats (json, table): use one of -o table|json|markdown")
}

func TestPlanMarkdown(t *testing.T) {
	do, si, sc := deadletter.ReasonDependencyOpen, deadletter.ReasonSignatureInvalid, deadletter.ReasonSchemaInvalid
	pl := &redrivetype.Plan{Pipeline: "agent-tasks", Owner: "platform-oncall", Total: 17, StartWhy: "not a move task", Groups: []redrivetype.PlanGroup{
		{Reason: sc, Count: 3, Redrivable: sc.Redrivable(), Needs: "Ack.FixDeployed", Why: "after the fix",
			Next: []redrivetype.Step{{Action: audit.ActionSelect, Reason: sc, Canary: 3, Needs: []string{"Ack.FixDeployed"}}}},
		{Reason: si, Fingerprint: "bbbbbbbbbbbb", Count: 2, Redrivable: si.Redrivable(), Needs: "Ack.Overrides", Why: "never",
			Next: []redrivetype.Step{{Action: audit.ActionReject, Reason: si, Fingerprint: "bbbbbbbbbbbb"}}},
		{Reason: do, Fingerprint: "aaaaaaaaaaaa", Count: 12, Redrivable: do.Redrivable(), MayRedrive: true, Why: "a | pipe",
			Next: []redrivetype.Step{{Action: audit.ActionSelect, Reason: do, Fingerprint: "aaaaaaaaaaaa", Canary: 5}}},
	}}
	var b bytes.Buffer
	require.NoError(t, planMarkdown(&b, pl))
	md := b.String()
	assert.Contains(t, md, "## Redrive plan: agent-tasks\n")
	var table []string
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "|") {
			table = append(table, l)
		}
	}
	require.Len(t, table, 2+3, "header, separator and one row a group:\n%s", md)
	assert.Equal(t, "| reason | fingerprint | count | redrive | why |", table[0])
	assert.Equal(t, "| --- | --- | --- | --- | --- |", table[1])
	for _, row := range table {
		assert.Equal(t, 6, strings.Count(strings.ReplaceAll(row, `\|`, ""), "|"), "every row has 5 cells: %s", row)
	}
	assert.Contains(t, md, "| dependency_open | `aaaaaaaaaaaa` | 12 | yes, canary first |")
	assert.Contains(t, md, "| schema_invalid | - | 3 | after --fix-deployed |")
	assert.Equal(t, 3, strings.Count(md, "```sh\n"), "one command block a group")

	b.Reset()
	require.NoError(t, tasksMarkdown(&b, []redrivetype.MoveTask{{Status: "RUNNING", Moved: 3, ToMove: 9, Rate: 10, TaskHandle: "h1", FailureReason: "a|b"}}))
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 3)
	assert.Contains(t, lines[2], "| RUNNING | 3/9 | 10 |")
	assert.Contains(t, lines[2], `a\|b`, "a | in a cell is escaped")
}

func TestLogFormat(t *testing.T) {
	var b bytes.Buffer
	for _, tt := range []struct {
		format string
		tty    bool
		json   bool
	}{
		{logAuto, false, true}, {logAuto, true, false}, {logJSON, true, true}, {logJSON, false, true}, {logText, false, false}, {logText, true, false},
	} {
		b.Reset()
		con := &errConsole{w: &b, tty: tty(tt.tty)}
		slog.New(logHandler(con, tt.format, slog.LevelInfo)).Info("scan done", "seen", 3)
		line := strings.TrimSpace(b.String())
		if tt.json {
			var m map[string]any
			assert.NoError(t, json.Unmarshal([]byte(line), &m), "%s on tty=%v: %q", tt.format, tt.tty, line)
		} else {
			assert.Contains(t, line, `level=INFO msg="scan done" seen=3`, "%s on tty=%v", tt.format, tt.tty)
		}
	}
}

func tty(b bool) bool { return b }

func TestVerboseGatesInfo(t *testing.T) {
	for _, verbose := range []bool{false, true} {
		var b bytes.Buffer
		g := &globalFlags{logFormat: logJSON, verbose: verbose}
		log := g.logger(&b)
		log.Info("redrive audit", "action", "plan")
		log.Warn("redrive audit", "outcome", "refused")
		n := strings.Count(b.String(), "\n")
		if verbose {
			assert.Equal(t, 2, n, "with --verbose, info and warn: %s", b.String())
		} else {
			assert.Equal(t, 1, n, "without --verbose, only the warning: %s", b.String())
			assert.Contains(t, b.String(), `"level":"WARN"`)
		}
	}
}

// The logs and a progress bar share stderr: a log line clears the bar's
// line and the bar is drawn again under it.
func TestLogsDoNotInterleaveWithTheBar(t *testing.T) {
	var b bytes.Buffer
	con := &errConsole{w: &b, tty: true}
	bw := barWriter{con}
	fmt.Fprint(bw, "\rsending  40% |████      | (40/100, 80 msg/s) [0s:1s]")
	slog.New(logHandler(con, logJSON, slog.LevelInfo)).Info("retry", "n", 1)
	got := b.String()
	frame := "\rsending  40% |████      | (40/100, 80 msg/s) [0s:1s]"
	i := strings.Index(got, clearLine+`{"time"`)
	require.GreaterOrEqual(t, i, 0, "the bar's line is cleared before the log line: %q", got)
	assert.True(t, strings.HasSuffix(got, "}\n"+frame), "the bar is drawn again under the log line: %q", got)
	// Once the bar is cleared (finished), logs are written as they are.
	fmt.Fprint(bw, "\r                    \r")
	b.Reset()
	slog.New(logHandler(con, logJSON, slog.LevelInfo)).Info("done")
	assert.True(t, strings.HasPrefix(b.String(), `{"time"`), "%q", b.String())
}

// The first frame of a bar comes after the warmup, so its rate is an
// average over at least that long, not the rate of one early tick.
func TestBarFirstTick(t *testing.T) {
	var b bytes.Buffer
	con := &errConsole{w: &b, tty: true}
	b1 := startBar(con, 1000, "sending")
	b1.Add(100)
	assert.Empty(t, b.String(), "no frame before the warmup")
	time.Sleep(barWarmup + 50*time.Millisecond)
	b1.Add(10)
	frame := b.String()
	require.NotEmpty(t, frame)
	assert.Contains(t, frame, "(110/1000")
	m := regexp.MustCompile(`(\d+) msg/s`).FindStringSubmatch(frame)
	require.NotNil(t, m, "the frame shows a rate: %q", frame)
	rate, _ := strconv.Atoi(m[1])
	assert.LessOrEqual(t, rate, int(110/barWarmup.Seconds())+1, "the rate is an average over the warmup at least: %q", frame)
	assert.Regexp(t, `\[\d+s:\d+s\]`, frame, "elapsed and time left")
	// An approximate total that is passed grows.
	b1.Set(1500)
	assert.EqualValues(t, 1500, b1.max, "the total grew to the count")
	b1.Finish()
	assert.Nil(t, con.frame, "a finished bar is forgotten")
	// A finished bar draws and clears nothing more (the load bench
	// finishes its drain bar at the drain's end and again on the way out).
	n := b.Len()
	b1.Add(5)
	b1.Finish()
	assert.Equal(t, n, b.Len(), "nothing written after Finish: %q", b.String()[n:])
	var nilBar *bar
	nilBar.Add(1) // stderr not a terminal: no bar, no panic
	nilBar.Finish()
}

// --profile and --region reach the AWS config every command loads.
func TestProfileAndRegionFlags(t *testing.T) {
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "config")
	require.NoError(t, os.WriteFile(cfgFile, []byte("[default]\nregion = us-east-1\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = x\n\n[profile oncall]\nregion = eu-west-3\naws_access_key_id = AKIDONCALL\naws_secret_access_key = y\n"), 0o600))
	t.Setenv("AWS_CONFIG_FILE", cfgFile)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "none"))
	for _, k := range []string{"AWS_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
		t.Setenv(k, "")
		require.NoError(t, os.Unsetenv(k))
	}
	probe := func(args ...string) (region, key string, code int) {
		root := newRootCmd()
		root.AddCommand(&cobra.Command{Use: "probe", RunE: func(c *cobra.Command, _ []string) error {
			cfg, err := awscfg.Load(c.Context())
			if err != nil {
				return fmt.Errorf("aws config: %w", err)
			}
			creds, err := cfg.Credentials.Retrieve(c.Context())
			if err != nil {
				return err
			}
			region, key = cfg.Region, creds.AccessKeyID
			return nil
		}})
		var out, errb bytes.Buffer
		root.SetArgs(append(args, "probe"))
		root.SetOut(&out)
		root.SetErr(&errb)
		c, err := root.ExecuteC()
		return region, key, reportExit(c, err, &out, &errb)
	}
	region, key, code := probe()
	assert.Equal(t, []any{"us-east-1", "AKIDDEFAULT", 0}, []any{region, key, code})
	region, key, code = probe("--profile", "oncall")
	assert.Equal(t, []any{"eu-west-3", "AKIDONCALL", 0}, []any{region, key, code})
	region, key, code = probe("--profile", "oncall", "--region", "ap-south-1")
	assert.Equal(t, []any{"ap-south-1", "AKIDONCALL", 0}, []any{region, key, code})
	t.Setenv("AWS_REGION", "us-west-2")
	region, _, _ = probe("--region", "sa-east-1")
	assert.Equal(t, "sa-east-1", region, "--region wins over AWS_REGION")
	_, _, code = probe("--profile", "nope")
	assert.Equal(t, 2, code, "an unknown profile is bad input")
}

// The local commands find the checkout's scripts from a subfolder of it (the
// tests run in cmd/agentdlq).
func TestLocalFromASubfolder(t *testing.T) {
	t.Setenv("AGENTDLQ_LOCAL_DIR", t.TempDir())
	stdout, stderr, code := runArgs(t, "local", "status")
	assert.Contains(t, stdout, "sqs: stopped", "stderr: %s", stderr)
	assert.Equal(t, 1, code, "nothing runs: status fails, as scripts/local.sh status does")
}

// Every command that prints a result has -o with its formats, and every
// command's help has an example.
func TestEveryCommandHasExamplesAndOutput(t *testing.T) {
	root := newRootCmd()
	withOutput := map[string]string{
		"agentdlq redrive plan": "table, json, markdown", "agentdlq redrive status": "table, json, markdown",
		"agentdlq redrive select": "table, json", "agentdlq redrive start": "table, json",
		"agentdlq redrive cancel": "table, json", "agentdlq redrive reject": "table, json",
		"agentdlq triage": "table, json, markdown", "agentdlq ledger get": "table, json",
		"agentdlq send": "table, json, markdown", "agentdlq pause": "table, json", "agentdlq resume": "table, json",
		"agentdlq invoke": "json, table", "agentdlq bench": "json, table", "agentdlq local bench": "table, json",
		"agentdlq version": "table, json", "agentdlq work": "json, table", "agentdlq local dependency list": "table, json",
		"agentdlq capacity": "table, json",
	}
	seen := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := c.CommandPath()
		if c.Hidden || c.Name() == "help" || strings.HasPrefix(path, "agentdlq completion") || strings.HasPrefix(path, "agentdlq __") {
			return
		}
		if path != "agentdlq" {
			assert.NotEmpty(t, strings.TrimSpace(c.Example), "%s has no example in its help", path)
		}
		if want, ok := withOutput[path]; ok {
			seen[path] = true
			fl := c.Flags().Lookup("output")
			if assert.NotNil(t, fl, "%s has no -o", path) {
				assert.Equal(t, "o", fl.Shorthand)
				assert.Contains(t, fl.Usage, want, path)
			}
		}
		// A backquoted word in a flag's usage is, to pflag, the name of its
		// value: `--keys agentdlq ledger get` in triage's help made a bool
		// flag look as if it took an argument, and ate the backquotes.
		c.LocalFlags().VisitAll(func(fl *pflag.Flag) {
			name, _ := pflag.UnquoteUsage(fl)
			if fl.Value.Type() == "bool" {
				assert.Empty(t, name, "%s --%s is a switch, but its help shows a value %q (a backquoted word in its usage)", path, fl.Name, name)
			}
			assert.NotContains(t, name, " ", "%s --%s: its help shows the value %q (a backquoted phrase in its usage)", path, fl.Name, name)
		})
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	for path := range withOutput {
		assert.True(t, seen[path], "no command %s", path)
	}
}

// Help text speaks the operator's words, not the code's.
func TestHelpHasNoInternalNames(t *testing.T) {
	root := newRootCmd()
	internal := regexp.MustCompile(`\b(topology|workload|redrive|triage|awscfg|localpipeline|sampleworker|esm|loadbench|chaos|pipeline|ledger)\.[A-Z][A-Za-z]*`)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		text := c.Short + "\n" + c.Long + "\n" + c.Example + "\n" + c.Flags().FlagUsages()
		assert.Empty(t, internal.FindAllString(text, -1), "%s help names Go identifiers", c.CommandPath())
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
}

// The table forms of invoke and bench, and version's JSON.
func TestTablesAndVersionJSON(t *testing.T) {
	stdout, stderr, code := runArgs(t, "invoke", "--event", "../../events/testdata/sqs-mixed.json", "-o", "table")
	require.Equal(t, 0, code, stderr)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	ev, err := readSQSEvent("../../events/testdata/sqs-mixed.json")
	require.NoError(t, err)
	require.Len(t, lines, 1+len(ev.Records), "a header and a row a record")
	assert.Regexp(t, `^RECORD\s+OUTCOME\s+REASON$`, lines[0])
	outcomes := map[string]int{}
	for _, l := range lines[1:] {
		outcomes[strings.Fields(l)[1]]++
	}
	// The same counts as the JSON form.
	stdout, _, code = runArgs(t, "invoke", "--event", "../../events/testdata/sqs-mixed.json")
	require.Equal(t, 0, code)
	var res invokeOutput
	require.NoError(t, json.Unmarshal([]byte(stdout), &res))
	assert.Equal(t, len(res.DeadLetters), outcomes["dead-lettered"])
	assert.Equal(t, len(res.BatchItemFailures), outcomes["retried"])
	assert.Equal(t, len(ev.Records)-len(res.DeadLetters)-len(res.BatchItemFailures), outcomes["acknowledged"])

	stdout, stderr, code = runArgs(t, "bench", "--event", "../../events/testdata/sqs-valid.json", "--repeats", "2", "--warmup", "0", "-o", "table")
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, `(?m)^records\s+8$`, stdout)
	assert.Regexp(t, `(?m)^ok digest\s+[0-9a-f]{64}$`, stdout)

	stdout, _, code = runArgs(t, "version", "-o", "json")
	require.Equal(t, 0, code)
	var v buildVersion
	require.NoError(t, json.Unmarshal([]byte(stdout), &v), stdout)
	assert.NotEmpty(t, v.Version)
	assert.Equal(t, readVersion(), v)
}

// A refusal's next steps reach the JSON error as data (action, reason,
// fingerprint, canary, needs) with the command line that takes each, as
// the text error prints them.
func TestJSONErrorNextSteps(t *testing.T) {
	c := &cobra.Command{Use: "x"}
	o := addOutput(c, formatTable, formatJSON)
	require.NoError(t, o.Set("json"))
	p := &pipeline.Pipeline{Name: "agent-tasks", Owner: "platform-oncall"}
	rf := &redrive.Refusal{Code: redrivetype.CodeForbidden, Reason: "schema_invalid: needs the deployed fix",
		Next: []redrivetype.Step{{Action: audit.ActionSelect, Reason: deadletter.ReasonSchemaInvalid, Fingerprint: "fp1", Canary: 3, Needs: []string{"Ack.FixDeployed"}}}}
	var out, errb bytes.Buffer
	exit := reportExit(c, inFlags(fmt.Errorf("select: %w", rf), p), &out, &errb)
	assert.Equal(t, exitRefused, exit)
	var doc struct {
		Code string `json:"code"`
		Next []struct {
			Action      string   `json:"action"`
			Reason      string   `json:"reason"`
			Fingerprint string   `json:"fingerprint"`
			Canary      int      `json:"canary"`
			Needs       []string `json:"needs"`
			Command     string   `json:"command"`
		} `json:"next"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc), out.String())
	assert.Equal(t, "reason_not_redrivable", doc.Code)
	require.Len(t, doc.Next, 1, out.String())
	n := doc.Next[0]
	assert.Equal(t, "select", n.Action)
	assert.Equal(t, "schema_invalid", n.Reason)
	assert.Equal(t, "fp1", n.Fingerprint)
	assert.Equal(t, 3, n.Canary)
	assert.Equal(t, []string{"Ack.FixDeployed"}, n.Needs)
	assert.Equal(t, stepCommand(p, rf.Next[0]), n.Command)
	assert.Contains(t, n.Command, "agentdlq redrive select --pipeline agent-tasks --reason schema_invalid --fingerprint fp1")

	// Without the pipeline (it did not load) the steps are data only.
	out.Reset()
	reportExit(c, rf, &out, &errb)
	doc.Next = nil
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc), out.String())
	require.Len(t, doc.Next, 1)
	assert.Empty(t, doc.Next[0].Command)
	assert.Equal(t, "select", doc.Next[0].Action)
}
