package stack

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCdkNag fails on any AwsSolutions finding that is not suppressed, checks
// that the checks really ran, and that every suppression carries a reason.
func TestCdkNag(t *testing.T) {
	require.True(t, fx.synthOK)
	for _, s := range fx.stacks {
		t.Run(s.name, func(t *testing.T) {
			for _, m := range s.messages {
				if (m.level == "error" || m.level == "warning") && strings.Contains(m.text, "AwsSolutions-") {
					t.Errorf("unsuppressed cdk-nag %s at %s: %s", m.level, m.path, m.text)
				}
			}
			// The aspect ran: its report lists compliant rules for this stack.
			// The report is named AwsSolutions-<stage>-<stack>-NagReport.csv (the app's stage name is empty).
			reports, _ := filepath.Glob(filepath.Join(fx.outdir, "AwsSolutions-*"+s.name+"-NagReport.csv"))
			var report string
			for _, r := range reports {
				if strings.HasSuffix(filepath.Base(r), "-"+s.name+"-NagReport.csv") {
					report = r
				}
			}
			f, err := os.Open(report)
			require.NoError(t, err, "cdk-nag report in %s", fx.outdir)
			rows, err := csv.NewReader(f).ReadAll()
			require.NoError(t, err)
			require.NoError(t, f.Close())
			compliant := map[string]bool{}
			for _, r := range rows[1:] {
				switch r[2] {
				case "Compliant":
					compliant[r[0]] = true
				case "Non-Compliant":
					t.Errorf("non-compliant %s on %s", r[0], r[1])
				case "Suppressed":
					assert.NotEqual(t, "N/A", r[3], "suppression of %s on %s has a reason", r[0], r[1])
				}
			}
			for _, rule := range []string{"AwsSolutions-SQS2", "AwsSolutions-SQS3", "AwsSolutions-SQS4", "AwsSolutions-SNS3",
				"AwsSolutions-IAM4", "AwsSolutions-IAM5", "AwsSolutions-DDB3", "AwsSolutions-S1", "AwsSolutions-S10", "AwsSolutions-KMS5"} {
				assert.True(t, compliant[rule], "%s was checked and passed somewhere in %s", rule, s.name)
			}
			// Every suppression in the template carries a reason worth reading.
			n := 0
			for id, r := range s.tmpl["Resources"].(map[string]any) {
				md, _ := r.(map[string]any)["Metadata"].(map[string]any)
				nag, _ := md["cdk_nag"].(map[string]any)
				list, _ := nag["rules_to_suppress"].([]any)
				for _, e := range list {
					sup := e.(map[string]any)
					n++
					assert.GreaterOrEqual(t, len(strings.TrimSpace(sup["reason"].(string))), 40, "%s: suppression of %v needs a reason", id, sup["id"])
				}
			}
			assert.Greater(t, n, 0, "the suppressions are where the test looks")
		})
	}
}

// guardWaivers is testdata/cfn-guard-waivers.json: the one place where
// Control Tower rules that do not apply are waived, each with its reason.
type guardWaivers struct {
	Waivers []struct {
		Control   string   `json:"control"`
		Resources []string `json:"resources"`
		Reason    string   `json:"reason"`
	} `json:"waivers"`
}

var controlRE = regexp.MustCompile(`\[(CT\.[A-Z0-9]+\.PR\.[0-9]+)\]`)
var resourceRE = regexp.MustCompile(`/Resources/([A-Za-z0-9]+)`)

// guardViolation is one rule that a resource does not comply with.
type guardViolation struct{ control, rule, resource string }

func guardBinary() string {
	arch := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[runtime.GOARCH]
	platform := map[string]string{"linux": "ubuntu", "darwin": "macos"}[runtime.GOOS]
	return filepath.Join(fx.root, "node_modules", "@cdklabs", "cdk-validator-cfnguard", "bin", platform, arch, "cfn-guard")
}

// runGuard runs every Control Tower rule on a template, as the
// cdk-validator-cfnguard plugin does, and returns the violations.
func runGuard(t *testing.T, template string) []guardViolation {
	t.Helper()
	bin := guardBinary()
	rules := filepath.Join(fx.root, "node_modules", "@cdklabs", "cdk-validator-cfnguard", "rules", "control-tower", "cfn-guard")
	if !fileExists(bin) || !fileExists(rules) {
		t.Fatalf("cfn-guard or its rules are missing under node_modules (run `npm ci`): %s", bin)
	}
	out, err := exec.Command(bin, "validate", "--rules", rules, "--data", template,
		"--output-format", "json", "--show-summary", "none", "--structured").Output()
	// cfn-guard exits 19 when a rule fails; the JSON says which.
	if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 19) {
		t.Fatalf("cfn-guard: %v: %s", err, out)
	}
	var results []struct {
		Name         string            `json:"name"`
		NotCompliant []json.RawMessage `json:"not_compliant"`
		Compliant    []string          `json:"compliant"`
	}
	require.NoError(t, json.Unmarshal(out, &results), "cfn-guard output")
	require.Len(t, results, 1)
	require.NotEmpty(t, results[0].Compliant, "cfn-guard evaluated rules")
	var vs []guardViolation
	for _, nc := range results[0].NotCompliant {
		var r struct {
			Rule struct {
				Name string `json:"name"`
			} `json:"Rule"`
		}
		require.NoError(t, json.Unmarshal(nc, &r))
		controls := controlRE.FindAllStringSubmatch(string(nc), -1)
		require.NotEmpty(t, controls, "a violation names its control: %s", r.Rule.Name)
		seen := map[string]bool{}
		for _, m := range resourceRE.FindAllStringSubmatch(string(nc), -1) {
			if !seen[m[1]] {
				seen[m[1]] = true
				vs = append(vs, guardViolation{control: controls[0][1], rule: r.Rule.Name, resource: m[1]})
			}
		}
	}
	return vs
}

// TestControlTowerGuardRules runs the Control Tower cfn-guard rules on both
// synthesized templates: every violation must be waived with a reason, and
// every waiver must still be needed.
func TestControlTowerGuardRules(t *testing.T) {
	require.True(t, fx.synthOK)
	data, err := os.ReadFile(filepath.Join("testdata", "cfn-guard-waivers.json"))
	require.NoError(t, err)
	var w guardWaivers
	require.NoError(t, json.Unmarshal(data, &w))
	used := make([]bool, len(w.Waivers))
	var mu sync.Mutex
	t.Run("stacks", func(t *testing.T) {
		// The waivers name the resources of New's stacks (the adopter's
		// stack is checked by cdk-nag only).
		for _, name := range []string{mainStack, kmsStack} {
			s := fx.stacks[name]
			t.Run(s.name, func(t *testing.T) {
				t.Parallel() // one cfn-guard process per template
				checkGuard(t, s, &w, used, &mu)
			})
		}
	})
	for i, wv := range w.Waivers {
		assert.GreaterOrEqual(t, len(wv.Reason), 60, "waiver %s needs its reason", wv.Control)
		assert.True(t, used[i], "waiver %s %v matches nothing: remove it", wv.Control, wv.Resources)
	}
}

// checkGuard fails on the violations of one template that no waiver covers,
// and marks the waivers it used.
func checkGuard(t *testing.T, s *synthesized, w *guardWaivers, used []bool, mu *sync.Mutex) {
	vs := runGuard(t, s.file)
	mu.Lock()
	defer mu.Unlock()
	var unwaived []string
	for _, v := range vs {
		waived := false
		for i, wv := range w.Waivers {
			if wv.Control != v.control {
				continue
			}
			for _, pat := range wv.Resources {
				if regexp.MustCompile(pat).MatchString(v.resource) {
					waived, used[i] = true, true
				}
			}
		}
		if !waived {
			unwaived = append(unwaived, v.control+" ("+v.rule+") on "+v.resource)
		}
	}
	sort.Strings(unwaived)
	assert.Empty(t, unwaived, "Control Tower rules violated and not waived in testdata/cfn-guard-waivers.json")
}
