package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// Emulators are private emulators started by StartEmulators.
type Emulators struct {
	// Dir is the emulators' state directory (absolute).
	Dir string

	out  io.Writer
	env  []string
	keep bool
	once sync.Once
}

// Script is the emulator script, relative to the repository root (the
// working directory of the demo, the bench and the tests' make targets).
var Script = filepath.Join("scripts", "local.sh")

// StartConfig says how StartEmulatorsWith starts the emulators.
type StartConfig struct {
	// Progress is optional (default io.Discard): the script's lines.
	Progress io.Writer
	// Stderr is optional (default os.Stderr): where a failed start prints
	// the last lines of the log of the emulator that failed, even when
	// Progress is discarded (agentdlq local bench -o json).
	Stderr io.Writer
	// Keep is optional: Stop leaves the emulators running and says how to
	// stop them.
	Keep bool
	// Logs is optional (default .local/bench/emulators-<UTC time>): where
	// the logs of a failed start are kept, as Logs.<attempt>.<service>.log,
	// before its state directory goes (make bench-chaos passes the result
	// file's name without .txt, so they sit beside it).
	Logs string
	// Attempts is optional (default 2): starts tried before giving up,
	// each in a fresh state directory.
	Attempts int
	// Env is optional: more environment for the script (KEY=VALUE), after
	// this process's own.
	Env []string
	// TailLines is optional (default 20): lines of the failed emulator's
	// log printed on Stderr.
	TailLines int
}

// StartError is a start of the emulators that failed every attempt. Err is
// the last attempt's error; Service is the emulator the script named in
// its failure (sqs, dynamodb or s3; empty when it named none); Logs are
// the logs kept, every attempt's.
type StartError struct {
	Attempts int
	Service  string
	Logs     []string
	Err      error
}

func (e *StartError) Error() string {
	what := "the emulators"
	if e.Service != "" {
		what = "the emulators (" + e.Service + ")"
	}
	// The failed emulator's logs when it is known (Logs has them all).
	var logs []string
	for _, l := range e.Logs {
		if e.Service == "" || strings.HasSuffix(l, "."+e.Service+".log") {
			logs = append(logs, l)
		}
	}
	kept := ""
	if len(logs) > 0 {
		kept = "; logs kept: " + strings.Join(logs, ", ")
	}
	return fmt.Sprintf("starting %s failed %d time(s) (%s up): %v%s", what, e.Attempts, Script, e.Err, kept)
}

func (e *StartError) Unwrap() error { return e.Err }

// StartEmulators starts the SQS, DynamoDB and S3 emulators on free ports of
// 127.0.0.1 in a fresh state directory under .local/, and sets this
// process's AWS_ENDPOINT_URL_* and credentials to reach them. Progress goes
// to out. With keep, Stop leaves them running and says how to stop them.
// A failed start is retried once; see StartEmulatorsWith.
func StartEmulators(ctx context.Context, out io.Writer, keep bool) (*Emulators, error) {
	return StartEmulatorsWith(ctx, StartConfig{Progress: out, Keep: keep})
}

// StartEmulatorsWith is StartEmulators with its settings. A start that
// fails (an emulator exits during start or does not answer) keeps the logs
// of its state directory under cfg.Logs, prints the last lines of the
// failed emulator's log on cfg.Stderr, stops what did start, and is tried
// again in a fresh state directory, up to cfg.Attempts times; then the
// error is a *StartError.
func StartEmulatorsWith(ctx context.Context, cfg StartConfig) (*Emulators, error) {
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	if cfg.Stderr == nil {
		cfg.Stderr = os.Stderr
	}
	if cfg.Attempts < 1 {
		cfg.Attempts = 2
	}
	if cfg.TailLines < 1 {
		cfg.TailLines = 20
	}
	if cfg.Logs == "" {
		cfg.Logs = filepath.Join(".local", "bench", "emulators-"+time.Now().UTC().Format("20060102T150405Z"))
	}
	if err := os.MkdirAll(".local", 0o755); err != nil {
		return nil, err
	}
	serr := &StartError{}
	for attempt := 1; attempt <= cfg.Attempts; attempt++ {
		e, err := startOnce(ctx, cfg)
		if err == nil {
			return e, nil
		}
		serr.Attempts, serr.Err = attempt, err
		var failed *failedStart
		if !errors.As(err, &failed) {
			return nil, err // no state directory: nothing to keep or retry
		}
		serr.Service = failed.service
		kept := keepLogs(cfg, failed, attempt)
		serr.Logs = append(serr.Logs, kept...)
		failed.em.Stop()
		if ctx.Err() != nil {
			break
		}
		if attempt < cfg.Attempts {
			fmt.Fprintf(cfg.Stderr, "local: the emulators' start failed (attempt %d of %d); trying again in a fresh state directory\n", attempt, cfg.Attempts)
		}
	}
	return nil, serr
}

// failedStart is a `scripts/local.sh up` that failed, with what it left.
type failedStart struct {
	em      *Emulators
	service string // the emulator the script named, if any
	err     error
}

func (f *failedStart) Error() string { return f.err.Error() }
func (f *failedStart) Unwrap() error { return f.err }

// failedService finds the emulator scripts/local.sh names when a start
// fails ("local: sqs exited during start", "local: s3 did not answer").
var failedService = regexp.MustCompile(`local: (sqs|dynamodb|s3) (exited during start|did not answer)`)

func startOnce(ctx context.Context, cfg StartConfig) (*Emulators, error) {
	dir, err := os.MkdirTemp(".local", "demo.")
	if err != nil {
		return nil, err
	}
	abs, _ := filepath.Abs(dir)
	// The script prints no log lines itself (AGENTDLQ_LOG_TAIL=0): they go
	// to cfg.Stderr from here, which -o json does not discard.
	e := &Emulators{Dir: abs, out: cfg.Progress, keep: cfg.Keep, env: append([]string{"AGENTDLQ_LOG_TAIL=0"}, cfg.Env...)}
	var said bytes.Buffer
	if _, err := e.run(ctx, "up", io.MultiWriter(cfg.Progress, &said)); err != nil {
		e.keep = false // a failed start is stopped, kept or not
		f := &failedStart{em: e, err: err}
		if m := failedService.FindStringSubmatch(said.String()); m != nil {
			f.service = m[1]
			f.err = fmt.Errorf("%s: %w", strings.TrimPrefix(m[0], "local: "), err)
		}
		return nil, f
	}
	env, err := e.run(ctx, "env", cfg.Progress)
	if err != nil {
		e.Stop()
		return nil, err
	}
	if err := SetExports(string(env)); err != nil {
		e.Stop()
		return nil, err
	}
	return e, nil
}

// keepLogs copies the logs of a failed start out of its state directory
// (which Stop removes) and prints the last lines of the failed emulator's
// log, or of every log when the script named none. It returns the copies.
func keepLogs(cfg StartConfig, f *failedStart, attempt int) []string {
	if err := os.MkdirAll(filepath.Dir(cfg.Logs), 0o755); err != nil {
		fmt.Fprintf(cfg.Stderr, "local: keeping the emulators' logs: %v\n", err)
		return nil
	}
	var kept []string
	for _, svc := range []string{"sqs", "dynamodb", "s3"} {
		data, err := os.ReadFile(filepath.Join(f.em.Dir, svc+".log"))
		if err != nil {
			continue // not started
		}
		dst := fmt.Sprintf("%s.%d.%s.log", cfg.Logs, attempt, svc)
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			fmt.Fprintf(cfg.Stderr, "local: keeping %s's log: %v\n", svc, err)
			continue
		}
		kept = append(kept, dst)
		if f.service != "" && svc != f.service {
			continue
		}
		fmt.Fprintf(cfg.Stderr, "local: %s's log, last %d lines (kept: %s):\n", svc, cfg.TailLines, dst)
		for _, line := range lastLines(data, cfg.TailLines) {
			fmt.Fprintf(cfg.Stderr, "  %s\n", line)
		}
		if len(bytes.TrimSpace(data)) == 0 {
			fmt.Fprintln(cfg.Stderr, "  (empty: it wrote nothing before it was found gone)")
		}
	}
	return kept
}

// lastLines returns the last n lines of data, without their newlines.
func lastLines(data []byte, n int) []string {
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return nil
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}

func (e *Emulators) run(ctx context.Context, sub string, w io.Writer) ([]byte, error) {
	c := exec.CommandContext(ctx, Script, sub)
	c.Env = append(os.Environ(), "AGENTDLQ_LOCAL_DIR="+e.Dir, "AGENTDLQ_SQS_PORT=0", "AGENTDLQ_DYNAMODB_PORT=0", "AGENTDLQ_S3_PORT=0")
	c.Env = append(c.Env, e.env...)
	c.Stderr = w
	return c.Output()
}

// Stop stops the emulators and removes their state (once; later calls do
// nothing), unless they were started to be kept.
func (e *Emulators) Stop() {
	e.once.Do(func() {
		if e.keep {
			fmt.Fprintf(e.out, "emulators left running: AGENTDLQ_LOCAL_DIR=%s scripts/local.sh env|down\n", e.Dir)
			return
		}
		if _, err := e.run(context.Background(), "down", io.Discard); err != nil {
			fmt.Fprintln(e.out, "stopping the emulators:", err)
		}
		_ = os.RemoveAll(e.Dir)
		fmt.Fprintln(e.out, "emulators stopped")
	})
}

// SetExports sets this process's environment from `export K=V` lines
// (scripts/local.sh env, ParseExports): what points the AWS SDK at the
// emulators. It sets nothing and fails when a variable cannot be set (a
// NUL byte), and fails on the first Setenv that fails: a process left
// without an emulator's endpoint would call AWS instead, so no caller may
// go on.
func SetExports(s string) error {
	env := ParseExports(s)
	keys := make([]string, 0, len(env))
	for k, v := range env {
		if strings.ContainsRune(k, 0) || strings.ContainsRune(v, 0) {
			return fmt.Errorf("local: the emulators' environment: %q holds a NUL byte: nothing set", k)
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := os.Setenv(k, env[k]); err != nil {
			return fmt.Errorf("local: the emulators' environment: set %s: %w", k, err)
		}
	}
	return nil
}

// ParseExports reads `export K=V` lines (scripts/local.sh env).
func ParseExports(s string) map[string]string {
	env := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "export "))
		if k, v, ok := strings.Cut(line, "="); ok && k != "" {
			env[k] = strings.Trim(v, `"'`)
		}
	}
	return env
}
