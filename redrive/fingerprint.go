package redrive

import (
	"sort"
	"strings"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
	"github.com/agentdlq/agentdlq/triage"
)

// minFingerprintPrefix is the fewest characters of a fingerprint an operator
// may give: like a git commit id, any unique prefix at least this long names
// its group.
const minFingerprintPrefix = 8

// needsGroups reports whether a fingerprint is shorter than triage's
// (triage.FingerprintLen): a prefix, to resolve against the DLQ's groups.
func needsGroups(fingerprints []string) bool {
	for _, fp := range fingerprints {
		if len(fp) < triage.FingerprintLen {
			return true
		}
	}
	return false
}

// resolveFingerprints returns the full fingerprints that prefixes name among
// the groups of the chosen reasons (all groups when reasons is empty). A
// prefix shorter than minFingerprintPrefix (8) is refused (unknown_fingerprint),
// as is one that names no group; one that names groups with different
// fingerprints is refused (ambiguous_fingerprint) with the candidates, so
// that the operator gives more characters. Full fingerprints resolve to
// themselves.
func resolveFingerprints(prefixes []string, reasons []deadletter.Reason, groups []Group) ([]string, error) {
	if len(prefixes) == 0 {
		return nil, nil
	}
	chosen := map[deadletter.Reason]bool{}
	for _, r := range reasons {
		chosen[r] = true
	}
	out := make([]string, 0, len(prefixes))
	for _, p := range prefixes {
		p = strings.TrimSpace(p)
		if len(p) < minFingerprintPrefix {
			rf := refuseField(redrivetype.CodeUnknownGroup, "Fingerprints", "%q is too short: give at least %d characters of it (the plan lists each group's)", p, minFingerprintPrefix)
			rf.Next = []redrivetype.Step{{Action: audit.ActionPlan}}
			return nil, rf
		}
		seen := map[string]bool{}
		var candidates []string
		for _, g := range groups {
			if (len(chosen) > 0 && !chosen[g.Reason]) || !strings.HasPrefix(g.Fingerprint, p) || seen[g.Fingerprint] {
				continue
			}
			seen[g.Fingerprint] = true
			candidates = append(candidates, g.Fingerprint)
		}
		switch len(candidates) {
		case 0:
			rf := refuseField(redrivetype.CodeUnknownGroup, "Fingerprints", "%s: no group of reason %s has a fingerprint starting so (the plan lists each group's)", p, joinReasons(reasons))
			rf.Next = []redrivetype.Step{{Action: audit.ActionPlan}}
			return nil, rf
		case 1:
			out = append(out, candidates[0])
		default:
			sort.Strings(candidates)
			return nil, refuseField(redrivetype.CodeAmbiguousGroup, "Fingerprints", "%s is ambiguous: it starts %s; give more characters", p, strings.Join(candidates, " and "))
		}
	}
	return out, nil
}
