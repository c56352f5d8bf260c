package readme

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTestDeps runs scripts/test-deps.sh — what makes the README's
// requirements enough for `make test` — on a PATH of fakes: a fake id,
// sudo and apt-get that record their calls, and, as the case says, fake
// qemu-aarch64 and chromium. Nothing is installed for real.
func TestTestDeps(t *testing.T) {
	t.Parallel()
	bash, err := exec.LookPath("bash")
	require.NoError(t, err)
	envBin, err := exec.LookPath("env")
	require.NoError(t, err)
	chmod, err := exec.LookPath("chmod")
	require.NoError(t, err)
	script, err := filepath.Abs(filepath.Join(root, "scripts", "test-deps.sh"))
	require.NoError(t, err)

	const line = "installing qemu-user and chromium from Debian's packages (first time only)"
	tests := []struct {
		name        string
		have        []string // fakes on the PATH before the run
		uid         string   // what id -u says
		sudo        bool     // a sudo on the PATH
		noAptGet    bool     // no apt-get on the PATH
		aptFails    bool     // apt-get install exits 100
		installs    []string // what the fake apt-get install puts on the PATH
		chromiumEnv string   // AGENTDLQ_CHROMIUM, a fake of this name when set

		wantOK     bool
		wantCalls  []string // sudo and apt-get calls, in order
		wantStderr []string // substrings of stderr
		wantQuiet  bool     // nothing on stderr
	}{
		{
			name: "both there: quiet, no apt-get", have: []string{"qemu-aarch64", "chromium"}, uid: "0",
			wantOK: true, wantQuiet: true,
		},
		{
			name: "the static qemu and chromium-browser count", have: []string{"qemu-aarch64-static", "chromium-browser"}, uid: "1000",
			wantOK: true, wantQuiet: true,
		},
		{
			name: "AGENTDLQ_CHROMIUM counts", have: []string{"qemu-aarch64", "my-chrome"}, uid: "0", chromiumEnv: "my-chrome",
			wantOK: true, wantQuiet: true,
		},
		{
			name: "both missing, root: update, then one install", uid: "0", installs: []string{"qemu-aarch64", "chromium"},
			wantOK: true,
			wantCalls: []string{
				"apt-get -qq update",
				"apt-get install -y -qq --no-install-recommends qemu-user chromium fonts-dejavu-core",
			},
			wantStderr: []string{line},
		},
		{
			name: "only qemu missing, a user with sudo", have: []string{"chromium"}, uid: "1000", sudo: true, installs: []string{"qemu-aarch64"},
			wantOK: true,
			wantCalls: []string{
				"sudo apt-get -qq update", "apt-get -qq update",
				"sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends qemu-user",
				"apt-get install -y -qq --no-install-recommends qemu-user",
			},
			wantStderr: []string{"installing qemu-user from Debian's packages (first time only)"},
		},
		{
			name: "no apt-get: says what to install", uid: "0", noAptGet: true,
			wantStderr: []string{"no apt-get", "apt-get install qemu-user chromium fonts-dejavu-core"},
		},
		{
			name: "not root, no sudo: says so, installs nothing", have: []string{"qemu-aarch64"}, uid: "1000",
			wantStderr: []string{"not root and has no sudo", "needs chromium;"},
		},
		{
			name: "apt-get fails", uid: "0", aptFails: true,
			wantCalls: []string{
				"apt-get -qq update",
				"apt-get install -y -qq --no-install-recommends qemu-user chromium fonts-dejavu-core",
			},
			wantStderr: []string{line, "apt-get could not install qemu-user chromium fonts-dejavu-core"},
		},
		{
			name: "installed, neither on the PATH", uid: "0",
			wantCalls: []string{
				"apt-get -qq update",
				"apt-get install -y -qq --no-install-recommends qemu-user chromium fonts-dejavu-core",
			},
			wantStderr: []string{"qemu-user and chromium are still not on the PATH"},
		},
		{
			name: "installed, still not on the PATH", uid: "0", installs: []string{"qemu-aarch64"},
			wantCalls: []string{
				"apt-get -qq update",
				"apt-get install -y -qq --no-install-recommends qemu-user chromium fonts-dejavu-core",
			},
			wantStderr: []string{"chromium is still not on the PATH"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			bin := filepath.Join(dir, "bin")
			require.NoError(t, os.Mkdir(bin, 0o755))
			calls := filepath.Join(dir, "calls")
			fake := func(name, body string) {
				require.NoError(t, os.WriteFile(filepath.Join(bin, name), []byte("#!"+bash+"\n"+body+"\n"), 0o755))
			}
			for _, name := range tc.have {
				fake(name, "exit 0")
			}
			require.NoError(t, os.Symlink(envBin, filepath.Join(bin, "env")))
			fake("id", `[ "$1" = -u ] && echo `+tc.uid)
			if tc.sudo {
				fake("sudo", `echo "sudo $*" >>`+calls+`; exec "$@"`)
			}
			if !tc.noAptGet {
				install := ""
				for _, name := range tc.installs {
					p := filepath.Join(bin, name)
					install += "echo 'exit 0' >" + p + "; " + chmod + " +x " + p + "\n"
				}
				fail := ""
				if tc.aptFails {
					fail = "exit 100"
				}
				fake("apt-get", `echo "apt-get $*" >>`+calls+`
if [ "$1" = install ]; then `+fail+`
`+install+`
true; fi`)
			}

			cmd := exec.Command(bash, script)
			cmd.Env = []string{"PATH=" + bin}
			if tc.chromiumEnv != "" {
				cmd.Env = append(cmd.Env, "AGENTDLQ_CHROMIUM="+tc.chromiumEnv)
			}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			if tc.wantOK {
				assert.NoError(t, err, "stderr: %s", stderr.String())
			} else {
				assert.Error(t, err, "stderr: %s", stderr.String())
			}
			got, _ := os.ReadFile(calls)
			var gotCalls []string
			if s := strings.TrimSpace(string(got)); s != "" {
				gotCalls = strings.Split(s, "\n")
			}
			assert.Equal(t, tc.wantCalls, gotCalls)
			if tc.wantQuiet {
				assert.Empty(t, stderr.String())
			}
			for _, want := range tc.wantStderr {
				assert.Contains(t, stderr.String(), want)
			}
		})
	}
}
