package runner

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// Emulators are private emulators started by StartEmulators.
type Emulators struct {
	// Dir is the emulators' state directory (absolute).
	Dir string

	out  io.Writer
	keep bool
	once sync.Once
}

// Script is the emulator script, relative to the repository root (the
// working directory of the demo, the bench and the tests' make targets).
var Script = filepath.Join("scripts", "local.sh")

// StartEmulators starts the SQS, DynamoDB and S3 emulators on free ports of
// 127.0.0.1 in a fresh state directory under .local/, and sets this
// process's AWS_ENDPOINT_URL_* and credentials to reach them. Progress goes
// to out. With keep, Stop leaves them running and says how to stop them.
func StartEmulators(ctx context.Context, out io.Writer, keep bool) (*Emulators, error) {
	if err := os.MkdirAll(".local", 0o755); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(".local", "demo.")
	if err != nil {
		return nil, err
	}
	abs, _ := filepath.Abs(dir)
	e := &Emulators{Dir: abs, out: out, keep: keep}
	if _, err := e.run(ctx, "up", out); err != nil {
		e.Stop()
		return nil, fmt.Errorf("starting the emulators (%s up): %w", Script, err)
	}
	env, err := e.run(ctx, "env", out)
	if err != nil {
		e.Stop()
		return nil, err
	}
	for k, v := range ParseExports(string(env)) {
		_ = os.Setenv(k, v)
	}
	return e, nil
}

func (e *Emulators) run(ctx context.Context, sub string, w io.Writer) ([]byte, error) {
	c := exec.CommandContext(ctx, Script, sub)
	c.Env = append(os.Environ(), "AGENTDLQ_LOCAL_DIR="+e.Dir, "AGENTDLQ_SQS_PORT=0", "AGENTDLQ_DYNAMODB_PORT=0", "AGENTDLQ_S3_PORT=0")
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
