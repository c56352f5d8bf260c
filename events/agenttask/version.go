package agenttask

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/Masterminds/semver/v3"

	"github.com/agentdlq/agentdlq/events/deadletter"
)

// maxVerdicts bounds the verdicts a range remembers: producers send a handful
// of distinct versions, and a flood of unique ones must not grow memory.
const maxVerdicts = 64

// versionRange is a parsed catalog range with the verdicts it has given,
// so that the common versions cost one map lookup and no allocation.
type versionRange struct {
	constraint *semver.Constraints // nil when the catalog's range does not parse
	outside    *ValidationError    // the refusal for a semver version outside the range
	notSemver  *ValidationError    // the refusal for a version that is not semver
	broken     *ValidationError    // the refusal when the range itself is not a constraint

	mu       sync.Mutex                                  // serialises writers of verdicts
	verdicts atomic.Pointer[map[string]*ValidationError] // version → nil (supported) or its refusal; copy on write
}

// ranges holds one versionRange per distinct range string of every catalog
// in the process (copy on write: a catalog has a few).
var (
	rangesMu sync.Mutex
	ranges   atomic.Pointer[map[string]*versionRange]
)

// ParseVersions checks that s is a range a catalog entry may declare: a major
// ("2", which means 2.x), or a Masterminds semver constraint such as
// ">=1.2.0 <4.0.0" or "1.x || 3.x".
func ParseVersions(s string) error {
	if strings.TrimSpace(s) == "" {
		return fmt.Errorf("tool versions: empty range (want a major such as \"2\" or a constraint such as \">=1.2.0 <4.0.0\")")
	}
	if _, err := semver.NewConstraint(s); err != nil {
		return fmt.Errorf("tool versions %q: not a semver range: %w", s, err)
	}
	return nil
}

func rangeOf(s string) *versionRange {
	if m := ranges.Load(); m != nil {
		if r, ok := (*m)[s]; ok {
			return r
		}
	}
	rangesMu.Lock()
	defer rangesMu.Unlock()
	old := ranges.Load()
	if old != nil {
		if r, ok := (*old)[s]; ok {
			return r
		}
	}
	r := newVersionRange(s)
	next := make(map[string]*versionRange, 1+lenOf(old))
	if old != nil {
		for k, v := range *old {
			next[k] = v
		}
	}
	next[strings.Clone(s)] = r
	ranges.Store(&next)
	return r
}

func lenOf[V any](m *map[string]V) int {
	if m == nil {
		return 0
	}
	return len(*m)
}

func newVersionRange(s string) *versionRange {
	r := &versionRange{
		outside:   invalid(deadletter.ReasonToolVersionUnsupported, "tool_version", fmt.Sprintf("outside the tool's supported range %q", s)),
		notSemver: invalid(deadletter.ReasonToolVersionUnsupported, "tool_version", fmt.Sprintf("not a semver version (the tool supports %q)", s)),
		broken:    invalid(deadletter.ReasonToolVersionUnsupported, "tool_version", fmt.Sprintf("the catalog's range %q is not a semver constraint", s)),
	}
	if c, err := semver.NewConstraint(s); err == nil {
		r.constraint = c
	}
	return r
}

// check returns nil when v is in the range, or the refusal. The returned
// *ValidationError is shared: callers must not modify it.
func (r *versionRange) check(v string) *ValidationError {
	if m := r.verdicts.Load(); m != nil {
		if verdict, ok := (*m)[v]; ok {
			return verdict
		}
	}
	verdict := r.decide(v)
	r.remember(v, verdict)
	return verdict
}

func (r *versionRange) decide(v string) *ValidationError {
	if r.constraint == nil {
		return r.broken
	}
	ver, err := semver.NewVersion(v)
	if err != nil {
		return r.notSemver
	}
	if !r.constraint.Check(ver) {
		return r.outside
	}
	return nil
}

func (r *versionRange) remember(v string, verdict *ValidationError) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.verdicts.Load()
	if lenOf(old) >= maxVerdicts {
		return
	}
	next := make(map[string]*ValidationError, 1+lenOf(old))
	if old != nil {
		for k, x := range *old {
			next[k] = x
		}
	}
	// A clone: v may be a slice of a whole message body, which the map
	// would otherwise keep alive.
	next[strings.Clone(v)] = verdict
	r.verdicts.Store(&next)
}
