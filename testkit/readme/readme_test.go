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

const root = "../.."

func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	return string(b)
}

var shownRE = regexp.MustCompile("(?s)<!-- (snippet|excerpt): ([^ ]+) -->\n```[a-z]*\n(.*?)```\n")

// pages are README.md and the pages of docs/: the files whose marked
// blocks must match the tree.
func pages(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	return append([]string{filepath.Join(root, "README.md")}, docs...)
}

// TestSnippets: a block marked `<!-- snippet: PATH -->` is its file as it
// is; one marked `<!-- excerpt: PATH -->` is a run of whole lines of it, as
// they stand. To update one, paste the file (or the lines) between the
// fences again. The README shows examples/worker/main.go.
func TestSnippets(t *testing.T) {
	t.Parallel()
	inREADME := map[string]bool{}
	for _, page := range pages(t) {
		b, err := os.ReadFile(page)
		require.NoError(t, err)
		name, _ := filepath.Rel(root, page)
		for _, m := range shownRE.FindAllStringSubmatch(string(b), -1) {
			kind, path, block := m[1], m[2], m[3]
			if name == "README.md" {
				inREADME[path] = true
			}
			want, err := os.ReadFile(filepath.Join(root, path))
			if !assert.NoError(t, err, "%s shows %s", name, path) {
				continue
			}
			if kind == "snippet" {
				assert.Equal(t, string(want), block, "%s's block of %s differs from the file", name, path)
				continue
			}
			file := string(want)
			assert.True(t, strings.HasPrefix(file, block) || strings.Contains(file, "\n"+block),
				"%s's excerpt of %s is not a run of its lines as they stand:\n%s", name, path, block)
		}
	}
	assert.True(t, inREADME["examples/worker/main.go"], "the README shows the worker of examples/worker/main.go")
}

// TestLayout: every entry of the Layout block exists, and every top-level
// folder that holds Go code is in it.
func TestLayout(t *testing.T) {
	t.Parallel()
	entries := layout(t, readme(t))
	listed := map[string]bool{}
	for _, e := range entries {
		top, _, _ := strings.Cut(e, "/")
		listed[top] = true
		info, err := os.Stat(filepath.Join(root, e))
		if !assert.NoError(t, err, "Layout names %s", e) {
			continue
		}
		assert.Equal(t, strings.HasSuffix(e, "/"), info.IsDir(), "Layout: %s is a folder exactly when its name ends in /", e)
	}
	dirs, err := os.ReadDir(root)
	require.NoError(t, err)
	for _, d := range dirs {
		name := d.Name()
		if !d.IsDir() || strings.HasPrefix(name, ".") || name == "node_modules" || !holdsGo(t, filepath.Join(root, name)) {
			continue
		}
		assert.True(t, listed[name], "the Layout section does not name the folder %s/", name)
	}
}

// layout returns the paths the README's Layout block names, nested entries
// joined to their parents ("events/agenttask/").
func layout(t *testing.T, text string) []string {
	t.Helper()
	_, after, ok := strings.Cut(text, "\n## Layout\n")
	require.True(t, ok, "README.md has no Layout section")
	_, block, ok := strings.Cut(after, "```\n")
	require.True(t, ok)
	block, _, ok = strings.Cut(block, "```")
	require.True(t, ok)
	var stack []string // the parent folders of the current line
	var paths []string
	for _, line := range strings.Split(block, "\n") {
		name := strings.TrimLeft(line, " ")
		depth := (len(line) - len(name)) / 2
		name, _, _ = strings.Cut(name, " ")
		if name == "" || depth > 3 || (!strings.HasSuffix(name, "/") && !strings.Contains(name, ".")) {
			continue // a continuation line
		}
		if depth > len(stack) {
			t.Fatalf("Layout: %q is indented deeper than its parent", line)
		}
		stack = stack[:depth]
		path := strings.Join(stack, "") + name
		paths = append(paths, path)
		if strings.HasSuffix(name, "/") {
			stack = append(stack, name)
		}
	}
	require.NotEmpty(t, paths)
	return paths
}

func holdsGo(t *testing.T, dir string) bool {
	found := false
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || found {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != dir {
			return filepath.SkipDir
		}
		found = !d.IsDir() && strings.HasSuffix(d.Name(), ".go")
		return nil
	})
	require.NoError(t, err)
	return found
}

// TestCDKOnlyInInfra: what the README's "Use it from your own module"
// says: only infra/... imports the CDK, so a worker module never needs it.
func TestCDKOnlyInInfra(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Deps " "}}`, "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	require.NoError(t, err, "go list")
	cdk := regexp.MustCompile(`(^| )github\.com/(aws/aws-cdk-go|aws/jsii-runtime-go|aws/constructs-go|cdklabs/cdk-nag-go)/`)
	var users []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, deps, _ := strings.Cut(line, " ")
		if cdk.MatchString(" " + deps) {
			users = append(users, strings.TrimPrefix(pkg, "github.com/agentdlq/agentdlq/"))
		}
	}
	require.NotEmpty(t, users, "infra imports the CDK")
	for _, p := range users {
		assert.True(t, p == "infra" || strings.HasPrefix(p, "infra/"), "%s imports the CDK; README says only infra/... does", p)
	}
}
