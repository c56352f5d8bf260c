package render

import (
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/agentdlq/agentdlq/triage/report"
)

// maxTextTenants bounds the tenant rows of the text report; Markdown,
// HTML and the JSON carry the report's (at most 50).
const maxTextTenants = 10

// TopReasons is a tenant's reasons, most first, as "reason n, reason n"
// (at most three, then "…").
func TopReasons(t report.TenantTotal) string {
	parts := make([]string, 0, 3)
	for i, rc := range t.ByReason {
		if i == 3 {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, fmt.Sprintf("%s %d", rc.Reason, rc.Count))
	}
	return strings.Join(parts, ", ")
}

// textTenants writes the tenant breakdown as an aligned table.
func textTenants(b *strings.Builder, r *report.Report) error {
	if len(r.Tenants) == 0 {
		return nil
	}
	b.WriteString("\nBy tenant:\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TENANT\tCOUNT\tSHARE\tOLDEST IN DLQ\tREASONS")
	for i, t := range r.Tenants {
		if i == maxTextTenants {
			break
		}
		mark := ""
		if t.Dominant {
			mark = " !"
		}
		fmt.Fprintf(tw, "%s%s\t%d\t%.1f %%\t%s\t%s\n", report.TenantLabel(t.Tenant), mark, t.Count, t.SharePercent, age(t.DwellSeconds), TopReasons(t))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if more := len(r.Tenants) - maxTextTenants + r.TenantsOmitted; more > 0 {
		fmt.Fprintf(b, "… and %d more tenants (the JSON report lists up to 50).\n", more)
	}
	return nil
}

// markdownTenants writes the tenant breakdown as a Markdown table.
func markdownTenants(b *strings.Builder, r *report.Report) {
	if len(r.Tenants) == 0 {
		return
	}
	b.WriteString("\n## By tenant\n\n| tenant | count | share | oldest in DLQ | reasons |\n|---|---:|---:|---|---|\n")
	for _, t := range r.Tenants {
		label := md(report.TenantLabel(t.Tenant))
		if t.Dominant {
			label = "**" + label + "** (dominates)"
		}
		fmt.Fprintf(b, "| %s | %d | %.1f %% | %s | %s |\n", label, t.Count, t.SharePercent, age(t.DwellSeconds), md(TopReasons(t)))
	}
	if r.TenantsOmitted > 0 {
		fmt.Fprintf(b, "\n… and %d more tenants.\n", r.TenantsOmitted)
	}
}

// SLOLine is the report's dead-letter SLO in one line: the target, the
// period's dead letters and, when the processed count was given or read,
// the error budget spent (and, when read, where from); when a read failed,
// why the budget is not known; "" when the report has no SLO section.
func SLOLine(r *report.Report) string {
	s := r.SLO
	if s == nil {
		return ""
	}
	line := fmt.Sprintf("SLO %g %% of tasks not dead-lettered: %s in the last %s", s.TargetPercent,
		plural(s.DeadLettered, "dead letter"), age(s.PeriodSeconds))
	if s.BudgetSpentPercent == nil {
		if s.BudgetUnknown != "" {
			return line + " (error budget spent: not known; " + s.BudgetUnknown + ")"
		}
		return line + " (error budget spent: not known to triage; give the period's processed count, agentdlq triage --processed N)"
	}
	spent := *s.BudgetSpentPercent
	line += fmt.Sprintf(" of %d tasks (%g %% bad): %s %% of the period's error budget spent", *s.Processed+s.DeadLettered, *s.BadPercent,
		strconv.FormatFloat(spent, 'f', -1, 64))
	if x := spent / 100; x > 1 {
		// Over budget: how many times faster than the target allows, which
		// a percentage in the thousands does not say at a glance.
		prec := 1
		if x >= 10 {
			prec = 0
		}
		line += ", " + strconv.FormatFloat(x, 'f', prec, 64) + "× the rate the target allows"
	}
	if s.ProcessedSource != "" {
		line += " (processed: " + s.ProcessedSource + ")"
	}
	return line
}
