package readme

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/agentdlq/agentdlq"

// goPackage is what `go list -json -deps` says of one package.
type goPackage struct {
	ImportPath string
	Imports    []string
	Deps       []string
	Standard   bool
	DepOnly    bool
}

// listPackages lists the module's packages (not their tests), each with its
// direct imports and its transitive dependencies.
func listPackages(t *testing.T) []goPackage {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	require.NoError(t, err, "go list")
	var pkgs []goPackage
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p goPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else {
			require.NoError(t, err)
		}
		pkgs = append(pkgs, p)
	}
	require.NotEmpty(t, pkgs)
	return pkgs
}

func rel(path string) string { return strings.TrimPrefix(strings.TrimPrefix(path, module), "/") }

func under(path string, prefixes ...string) bool {
	r := rel(path)
	for _, p := range prefixes {
		if r == p || strings.HasPrefix(r, p+"/") {
			return true
		}
	}
	return false
}

// TestNeverImports holds docs/architecture.md's "Never imports".
func TestNeverImports(t *testing.T) {
	t.Parallel()
	pkgs := listPackages(t)
	byPath := map[string]goPackage{}
	for _, p := range pkgs {
		byPath[p.ImportPath] = p
	}
	for _, p := range pkgs {
		r := rel(p.ImportPath)
		for _, d := range p.Deps {
			switch {
			case under(p.ImportPath, "events/agenttask", "events/deadletter", "pipeline", "capacity") && strings.HasPrefix(d, "github.com/aws/aws-sdk-go-v2"):
				t.Errorf("%s (the decision core) depends on %s: it must import no AWS SDK", r, d)
			case (r == "triage" || r == "redrive") && d == "html/template":
				t.Errorf("%s depends on html/template: rendering is triage/render's and the console's", r)
			case r == "triage" && d == "github.com/aws/aws-sdk-go-v2/service/cloudwatch":
				t.Errorf("%s depends on %s: the processed count is triage/processed's, wired by a face", r, d)
			case !under(p.ImportPath, "cmd", "console", "local", "bench", "testkit", "infra", "scripts", "events/gen", "functions/sampleworker/bench") &&
				strings.HasPrefix(d, module) && under(d, "cmd", "console", "local", "bench", "testkit"):
				t.Errorf("library %s depends on %s (a face or a harness)", r, rel(d))
			case under(p.ImportPath, "functions/batch", "functions/sampleworker/lambda") && strings.HasPrefix(d, module) && under(d, "triage", "redrive", "console"):
				t.Errorf("the worker %s depends on %s: the operator's side stays out of the hot path", r, rel(d))
			}
		}
		if !under(p.ImportPath, "internal") {
			for _, imp := range p.Imports {
				if imp == "unsafe" {
					t.Errorf("%s imports unsafe: only internal/ may", r)
				}
			}
		}
	}
	// The rules must see the packages they name.
	for _, want := range []string{"events/deadletter", "triage", "redrive", "functions/batch", "pipeline"} {
		if _, ok := byPath[module+"/"+want]; !ok {
			t.Errorf("go list has no %s: the rules above check nothing", want)
		}
	}
}
