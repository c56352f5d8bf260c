package loadbench

import (
	"fmt"
	"math/rand/v2"
	"sort"

	"github.com/agentdlq/agentdlq/local/workload"
)

// A cost mix is a workload in fixed proportions per 100 tasks, for the
// requests-per-task figures: what the drain costs depends on how many tasks
// fail and how.
type mixPart struct {
	kind workload.Kind
	n    int
}

// Mixes are the named workloads of --mix: "demo" is workload.Mix (every
// kind, 22 % failing); "mostly-ok" is 97 % valid (of them 5 % mutating,
// 2 % duplicates), 1 % transient that recovers, 2 % poison; "failures-40"
// fails 40 % (every poison and security kind, transients, exhausted
// budgets, effect unknown, auth); "outage" is a dependency outage: half the
// tasks call search-api while it is down (dependency_open on every
// receive until the budget is spent), the rest valid.
var Mixes = map[string][]mixPart{
	"mostly-ok": {
		{workload.OK, 90}, {workload.OKMutating, 5}, {workload.Duplicate, 2},
		{workload.TransientRecovers, 1}, {workload.ToolVersionUnsupported, 1}, {workload.SchemaInvalid, 1},
	},
	"failures-40": {
		{workload.OK, 55}, {workload.OKMutating, 3}, {workload.Duplicate, 2},
		{workload.JSONInvalid, 3}, {workload.SchemaInvalid, 3}, {workload.ToolUnknown, 3}, {workload.ToolVersionUnsupported, 3},
		{workload.SignatureInvalid, 3}, {workload.GuardrailReject, 3}, {workload.PolicyLimit, 3}, {workload.Unclassified, 3},
		{workload.TransientRecovers, 8}, {workload.BudgetExhausted, 3}, {workload.EffectUnknown, 2}, {workload.AuthConfig, 3},
	},
	"outage": {
		{workload.OK, 46}, {workload.OKMutating, 2}, {workload.Duplicate, 2}, {workload.DependencyOpen, 50},
	},
}

// OutageDependency is the dependency the outage mix takes down (the
// dependency_open tasks name it).
const OutageDependency = "search-api"

// MixNames lists the --mix values: "demo" and the cost mixes, sorted.
func MixNames() []string {
	names := []string{"demo"}
	for n := range Mixes {
		names = append(names, n)
	}
	sort.Strings(names[1:])
	return names
}

// CostMixes are the three mixes `make bench-cost` runs, in order.
var CostMixes = []string{"mostly-ok", "failures-40", "outage"}

// MakeMix builds n tasks of the named mix, shuffled with seed ("demo" is
// workload.Mix). A duplicate reuses the key of the last valid task before
// it.
func MakeMix(name, prefix string, n int, seed uint64) ([]workload.Task, error) {
	if name == "" || name == "demo" {
		return workload.Mix(prefix, n, seed), nil
	}
	parts, ok := Mixes[name]
	if !ok {
		return nil, fmt.Errorf("mix %q: one of %v", name, MixNames())
	}
	// n tasks in the mix's proportions, exactly for any n: each kind's
	// share rounded down, the tasks left over to the largest remainders.
	counts := make([]int, len(parts))
	rems := make([]int, len(parts))
	left := n
	for i, p := range parts {
		counts[i] = n * p.n / 100
		rems[i] = n * p.n % 100
		left -= counts[i]
	}
	for ; left > 0; left-- {
		best := 0
		for i := range rems {
			if rems[i] > rems[best] {
				best = i
			}
		}
		counts[best]++
		rems[best] = -1
	}
	kinds := make([]workload.Kind, 0, n)
	for i, p := range parts {
		for range counts[i] {
			kinds = append(kinds, p.kind)
		}
	}
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	r.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	ts := make([]workload.Task, n)
	lastOK := -1
	for i, k := range kinds {
		if k == workload.Duplicate && lastOK < 0 {
			k = workload.OK
		}
		ts[i] = workload.Make(prefix, i, k, lastOK)
		if k == workload.OK {
			lastOK = i
		}
	}
	return ts, nil
}

// kindCounts counts tasks by kind.
func kindCounts(tasks []workload.Task) map[workload.Kind]int {
	out := map[workload.Kind]int{}
	for _, t := range tasks {
		out[t.Kind]++
	}
	return out
}
