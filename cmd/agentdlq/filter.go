package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/agentdlq/agentdlq/redrive/redrivetype"
	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/dlq"
)

// filterFlags are --tool, --tenant, --since, --until and --contains, the
// flags of triage, redrive plan and redrive select: parsed here into a
// dlq.Filter, matched there.
type filterFlags struct {
	tool, tenant, since, until, contains string
}

func (ff *filterFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&ff.tool, "tool", "", "only dead letters of this tool (exactly)")
	fs.StringVar(&ff.tenant, "tenant", "", "only dead letters of this tenant (exactly, or its sha256:… form as reports show hashed tenants)")
	fs.StringVar(&ff.since, "since", "", "only dead letters dead-lettered at or after this time: RFC 3339 (2026-12-02T08:00:00Z) or a duration ago (2h, 90m, 7d)")
	fs.StringVar(&ff.until, "until", "", "only dead letters dead-lettered before this time: RFC 3339 or a duration ago")
	fs.StringVar(&ff.contains, "contains", "", "only dead letters whose error (code, redacted text or signature) contains TEXT, case-insensitively")
}

// parse reads the flags as of now; a bad time or an empty window is an error
// naming the flag: the one whose value does not parse (the error says
// which field), else both.
func (ff *filterFlags) parse(now time.Time) (dlq.Filter, error) {
	f, err := triage.ParseFilter(ff.tool, ff.tenant, ff.since, ff.until, ff.contains, now)
	var fe *triage.FilterFieldError
	switch {
	case errors.As(err, &fe):
		return dlq.Filter{}, fmt.Errorf("--%s: %w", fe.Field, fe.Err) // "--since: bad filter: …"
	case err != nil:
		return dlq.Filter{}, fmt.Errorf("--since/--until: %w", err)
	}
	return f, nil
}

// filterArgs is f as command-line flags, " --tool web.search --since …"
// ("" for the zero Filter): a rendered step keeps the filter it was
// planned with. Times are absolute (RFC 3339): a command copied later
// chooses the same letters.
func filterArgs(f dlq.Filter) string {
	fs := f.Fields()
	out := ""
	for _, k := range dlq.FilterFields {
		if v, ok := fs[k]; ok {
			out += " --" + k + " " + shq(v)
		}
	}
	return out
}

// planFilter is the filter a plan was made with (the zero Filter for none).
func planFilter(pl *redrivetype.Plan) dlq.Filter {
	if pl == nil || pl.Filter == nil {
		return dlq.Filter{}
	}
	return pl.Filter.Filter
}

// filterLine is the filter a plan was made with, as its header says it.
func filterLine(fd *dlq.Filtered) string {
	return fmt.Sprintf("%s: %d of %d dead letters seen", fd.Filter.String(), fd.Matched, fd.Scanned)
}
