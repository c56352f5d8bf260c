package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMain lets the test binary be the agentdlq a shell script runs: named
// agentdlq (a symlink the runbook walk puts first on the PATH), it runs the
// CLI's main instead of the tests.
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "agentdlq" {
		main()
		return
	}
	os.Exit(m.Run())
}

// The runbook's walk convention (RUNBOOK.md): an HTML comment that opens
// with "<!-- walk" marks the fenced block after it. Inside the comment, a
// line "N exit K" expects the block's command N (1-based, comments and
// blank lines not counted, continued lines one command) to exit K (else
// 0), and "N has TEXT" expects TEXT in its stdout and stderr.
var (
	walkExit = regexp.MustCompile(`^(\d+) exit (\d+)$`)
	walkHas  = regexp.MustCompile(`^(\d+) has (.+)$`)
)

// walkCommand is one command of a walked block and what the page says of it.
type walkCommand struct {
	Text string
	// Harness: the walk has done it already (make demo, pointing the
	// shell at the emulators, the PATH), so it is not run.
	Harness bool
	Exit    int
	Has     []string
}

// walkBlock is one walked block: its line in RUNBOOK.md and its commands.
type walkBlock struct {
	Line     int
	Commands []walkCommand
}

// harnessLine: the lines a walk has done itself before the first block.
func harnessLine(cmd string) bool {
	return strings.HasPrefix(cmd, "make ") || strings.HasPrefix(cmd, `eval "$(make -s local-env)"`) || strings.HasPrefix(cmd, "export PATH=")
}

// parseWalk returns the walked blocks of a runbook, in order.
func parseWalk(md string) ([]walkBlock, error) {
	lines := strings.Split(md, "\n")
	var blocks []walkBlock
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(strings.TrimSpace(lines[i]), "<!-- walk") {
			continue
		}
		start := i + 1
		exits, has := map[int]int{}, map[int][]string{}
		for ; i < len(lines) && !strings.Contains(lines[i], "-->"); i++ {
			l := strings.TrimSpace(lines[i])
			if m := walkExit.FindStringSubmatch(l); m != nil {
				n, _ := strconv.Atoi(m[1])
				exits[n], _ = strconv.Atoi(m[2])
			} else if m := walkHas.FindStringSubmatch(l); m != nil {
				n, _ := strconv.Atoi(m[1])
				has[n] = append(has[n], m[2])
			}
		}
		i++
		if i >= len(lines) || !strings.HasPrefix(strings.TrimSpace(lines[i]), "```") {
			return nil, fmt.Errorf("RUNBOOK.md:%d: a walk comment not followed by a fenced block", start)
		}
		indent := len(lines[i]) - len(strings.TrimLeft(lines[i], " "))
		b := walkBlock{Line: i + 1}
		cur := ""
		for i++; i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), "```"); i++ {
			l := lines[i]
			if len(l) >= indent {
				l = l[indent:]
			}
			t := strings.TrimSpace(l)
			if cur == "" && (t == "" || strings.HasPrefix(t, "#")) {
				continue
			}
			cur += l
			if strings.HasSuffix(t, `\`) || strings.HasSuffix(t, "&&") || strings.HasSuffix(t, "|") {
				cur += "\n"
				continue
			}
			b.Commands = append(b.Commands, walkCommand{Text: cur, Harness: harnessLine(cur)})
			cur = ""
		}
		for n := range exits {
			if n < 1 || n > len(b.Commands) {
				return nil, fmt.Errorf("RUNBOOK.md:%d: the walk names command %d of %d", start, n, len(b.Commands))
			}
		}
		for n := range has {
			if n < 1 || n > len(b.Commands) {
				return nil, fmt.Errorf("RUNBOOK.md:%d: the walk names command %d of %d", start, n, len(b.Commands))
			}
		}
		for j := range b.Commands {
			b.Commands[j].Exit, b.Commands[j].Has = exits[j+1], has[j+1]
		}
		blocks = append(blocks, b)
	}
	return blocks, nil
}

// The walk's convention holds on the runbook itself: its incident
// sections' blocks are marked, commands are split as a shell reads them,
// and the demo's own lines are left to the harness.
func TestRunbookWalkBlocks(t *testing.T) {
	md, err := os.ReadFile(filepath.Join("..", "..", "RUNBOOK.md"))
	require.NoError(t, err)
	blocks, err := parseWalk(string(md))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(blocks), 8, "the local walk, the own incident, effect_unknown's steps, the rejection")
	first := blocks[0].Commands
	require.GreaterOrEqual(t, len(first), 5)
	assert.True(t, first[0].Harness, first[0].Text)
	assert.False(t, first[3].Harness, first[3].Text)
	var all []string
	for _, b := range blocks {
		for _, c := range b.Commands {
			all = append(all, c.Text)
			assert.NotRegexp(t, `<[a-z][^>]*>`, c.Text, "RUNBOOK.md:%d: a placeholder cannot be walked", b.Line)
		}
	}
	joined := strings.Join(all, "\n")
	for _, want := range []string{"agentdlq ledger verify", "agentdlq ledger reconcile", "agentdlq redrive reject", "agentdlq redrive select", "agentdlq send"} {
		assert.Contains(t, joined, want)
	}

	_, err = parseWalk("<!-- walk\n3 exit 1\n-->\n```sh\necho a\n```\n")
	assert.ErrorContains(t, err, "command 3 of 1")
	got, err := parseWalk("  <!-- walk\n  1 has x\n  -->\n  ```sh\n  # note\n  a \\\n    b\n  c &&\n    d\n  ```\n")
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, []walkCommand{{Text: "a \\\n  b", Has: []string{"x"}}, {Text: "c &&\n  d"}}, got[0].Commands)
}

// walkRunbook runs RUNBOOK.md's walked blocks in order in one bash, in
// folder work (its out/ the demo's), with this test binary as agentdlq on
// the PATH, and checks each command's exit status and output against the
// page.
func walkRunbook(t *testing.T, work string) {
	t.Helper()
	md, err := os.ReadFile(filepath.Join("..", "..", "RUNBOOK.md"))
	require.NoError(t, err)
	blocks, err := parseWalk(string(md))
	require.NoError(t, err)

	self, err := os.Executable()
	require.NoError(t, err)
	bin := filepath.Join(t.TempDir(), "bin")
	require.NoError(t, os.MkdirAll(bin, 0o755))
	require.NoError(t, os.Symlink(self, filepath.Join(bin, "agentdlq")))
	config, err := filepath.Abs(filepath.Join("..", "..", "pipelines.json"))
	require.NoError(t, err)
	state, err := localStateDir()
	require.NoError(t, err)
	res := t.TempDir()

	var script strings.Builder
	fmt.Fprintf(&script, "W=%q\n", res)
	script.WriteString(`__run() { eval "$2" >"$W/out.$1" 2>&1; echo $? >"$W/rc.$1"; }` + "\n")
	script.WriteString(`trap 'kill $(jobs -p) 2>/dev/null; wait' EXIT` + "\n")
	for bi, b := range blocks {
		for ci, c := range b.Commands {
			if c.Harness {
				continue
			}
			fmt.Fprintf(&script, "read -r -d '' __c <<'__WALK_EOF'\n%s\n__WALK_EOF\n__run %d.%d \"$__c\"\n", c.Text, bi, ci+1)
		}
	}
	env := []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "AGENTDLQ_CONFIG=" + config, "AGENTDLQ_LOCAL_DIR=" + state}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "PATH" || k == "AGENTDLQ_CONFIG" || k == "AGENTDLQ_LOCAL_DIR" || strings.HasPrefix(k, "AGENTDLQ_HOT_QUEUE") || strings.HasPrefix(k, "AGENTDLQ_DLQ") {
			continue
		}
		env = append(env, kv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sh := exec.CommandContext(ctx, "bash", "-s")
	sh.Dir, sh.Env, sh.Stdin = work, env, strings.NewReader(script.String())
	// Its own process group: whatever the walk left running goes with it.
	sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	sh.Cancel = func() error { return syscall.Kill(-sh.Process.Pid, syscall.SIGKILL) }
	out, err := sh.CombinedOutput()
	require.NoError(t, err, "the walk's shell: %s", out)

	for bi, b := range blocks {
		for ci, c := range b.Commands {
			if c.Harness {
				continue
			}
			id := fmt.Sprintf("%d.%d", bi, ci+1)
			rc, err := os.ReadFile(filepath.Join(res, "rc."+id))
			if !assert.NoError(t, err, "RUNBOOK.md:%d command %d did not run: %s", b.Line, ci+1, c.Text) {
				continue
			}
			text, _ := os.ReadFile(filepath.Join(res, "out."+id))
			code, _ := strconv.Atoi(strings.TrimSpace(string(rc)))
			t.Logf("RUNBOOK.md:%d command %d exit %d: %s\n%s", b.Line, ci+1, code, c.Text, lastLines(text, 6))
			assert.Equal(t, c.Exit, code, "RUNBOOK.md:%d command %d exit status: %s\n%s", b.Line, ci+1, c.Text, lastLines(text, 15))
			for _, h := range c.Has {
				assert.Contains(t, string(text), h, "RUNBOOK.md:%d command %d: %s", b.Line, ci+1, c.Text)
			}
		}
	}
}

// lastLines is the last n lines of text, for a failure message.
func lastLines(text []byte, n int) string {
	var ls []string
	sc := bufio.NewScanner(strings.NewReader(string(text)))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		ls = append(ls, sc.Text())
	}
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, "\n")
}
