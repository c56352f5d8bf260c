package localtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// GenMix returns the SQS event that `go run ./events/gen -mix n -ok okPct`
// writes (the generator make bench-sizes uses). The generator is built for
// this machine, whatever GOOS and GOARCH the test binary was built for: under
// scripts/test-arm64.sh the test runs in qemu-user, and a generator built for
// arm64 could not be run by the host.
func GenMix(t testing.TB, n, okPct int) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "mix.json")
	cmd := exec.Command("go", "run", "github.com/agentdlq/agentdlq/events/gen",
		"-mix", strconv.Itoa(n), "-ok", strconv.Itoa(okPct), "-out", out)
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "GOARCH" && k != "GOOS" && k != "GOARM64" && k != "GOAMD64" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("events/gen -mix %d -ok %d: %v\n%s", n, okPct, err, b)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
