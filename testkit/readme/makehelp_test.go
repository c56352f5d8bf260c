package readme

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMakeHelp: `make help` lists every "## target: description" line of
// the Makefile as "  target  description", the names aligned, no line
// padded past its description, and a description whole even where it has
// colons of its own (column -t -s ':' padded every line to the longest
// description and split descriptions at their colons; issue 30).
func TestMakeHelp(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on the PATH")
	}
	b, err := os.ReadFile(filepath.Join(root, "Makefile"))
	require.NoError(t, err)
	doc := regexp.MustCompile(`(?m)^## ([a-z0-9-]+): (.*)$`).FindAllStringSubmatch(string(b), -1)
	require.NotEmpty(t, doc)
	width := 0
	for _, d := range doc {
		width = max(width, len(d[1]))
	}

	cmd := exec.Command("make", "-s", "--no-print-directory", "help")
	cmd.Dir = root
	out, err := cmd.Output()
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	require.Len(t, lines, len(doc), string(out))
	withColon := 0
	for i, d := range doc {
		want := "  " + d[1] + strings.Repeat(" ", width-len(d[1])) + "  " + d[2]
		assert.Equal(t, want, lines[i])
		if strings.Contains(d[2], ":") {
			withColon++
		}
	}
	assert.NotZero(t, withColon, "some description has a colon of its own, which help keeps")
}
