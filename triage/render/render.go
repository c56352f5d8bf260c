package render

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentdlq/agentdlq/internal/textutil"
	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/report"
)

// esc is a value for a line of the text report (textutil.Escape): message
// content never reaches the terminal as controls, and never breaks a row.
var esc = textutil.Escape

// Text writes the report for a terminal: a header, the expiry risk, an
// aligned table by reason and group, and what needs attention.
func Text(w io.Writer, r *report.Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "triage of %s (owner %s)%s\n", esc(r.Pipeline), esc(r.Owner), fifoNote(r.FIFO))
	if r.Queue != "" {
		fmt.Fprintf(&b, "DLQ %s\n", esc(r.Queue))
	}
	fmt.Fprintf(&b, "%s\n", esc(scanLine(r)))
	if r.Filter != nil {
		fmt.Fprintf(&b, "FILTERED: %s; the counts below are of those only\n", esc(r.Filter.Summary()))
	}
	if c := Coverage(r); c != "" {
		fmt.Fprintf(&b, "\n!!! %s\n\n", esc(c))
	}
	for _, why := range otherPartialReasons(r) {
		fmt.Fprintf(&b, "PARTIAL: %s\n", esc(why))
	}
	fmt.Fprintf(&b, "%s\n", esc(ExpiryLine(r)))
	if l := SLOLine(r); l != "" {
		fmt.Fprintf(&b, "%s\n", esc(l))
	}
	b.WriteString("\n")
	if r.Totals.Messages == 0 {
		b.WriteString("The DLQ is empty.\n")
	} else {
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "REASON / GROUP\tCOUNT\tOLDEST\tSOONEST EXPIRY\tNEXT ACTION\tREDRIVABLE")
		for _, rt := range r.Totals.ByReason {
			inferred := ""
			if rt.Inferred == rt.Count {
				inferred = " (inferred)"
			}
			fmt.Fprintf(tw, "%s%s\t%d\t%s\t%s\t%s\t%s\n", esc(string(rt.Reason)), inferred, rt.Count, age(rt.OldestAgeSeconds),
				until(rt.SoonestExpiry, r.GeneratedAt), esc(string(rt.NextAction)), esc(string(rt.Redrivable)))
			for _, g := range r.Groups {
				if g.Reason == rt.Reason {
					fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t\t\n", esc(groupLabel(g, 48)), g.Count, age(g.OldestAgeSeconds), until(g.SoonestExpiry, r.GeneratedAt))
				}
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if err := textTenants(&b, r); err != nil {
			return err
		}
	}
	// tabwriter pads the empty last cells: trim the lines' ends.
	lines := strings.Split(b.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	b.Reset()
	b.WriteString(strings.Join(lines, "\n"))
	if len(r.Attention) > 0 {
		b.WriteString("\nAttention:\n")
		for _, a := range r.Attention {
			fmt.Fprintf(&b, "  ! %s\n", esc(a))
		}
	}
	if n := len(r.Unreadable) + len(r.Skipped); n > 0 {
		fmt.Fprintf(&b, "\n%d unreadable, %d skipped (listed in the JSON report).\n", len(r.Unreadable), len(r.Skipped))
	}
	if r.Export != nil {
		fmt.Fprintf(&b, "\n%s\n", esc(exportLine(r.Export)))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Markdown writes the report as Markdown (for the report file and tickets).
func Markdown(w io.Writer, r *report.Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Triage of %s\n\n", textutil.MarkdownCode(r.Pipeline))
	if c := Coverage(r); c != "" {
		fmt.Fprintf(&b, "> **%s**\n\n", md(c))
	}
	fmt.Fprintf(&b, "- owner: %s%s\n", textutil.MarkdownCode(r.Owner), fifoNote(r.FIFO))
	if r.Queue != "" {
		fmt.Fprintf(&b, "- DLQ: %s\n", textutil.MarkdownCode(r.Queue))
	}
	fmt.Fprintf(&b, "- %s\n", esc(scanLine(r)))
	if r.Filter != nil {
		fmt.Fprintf(&b, "- **filtered**: %s; the counts below are of those only\n", md(r.Filter.Summary()))
	}
	for _, why := range otherPartialReasons(r) {
		fmt.Fprintf(&b, "- **partial**: %s\n", md(why))
	}
	fmt.Fprintf(&b, "- %s\n", esc(ExpiryLine(r)))
	if l := SLOLine(r); l != "" {
		fmt.Fprintf(&b, "- %s\n", md(l))
	}
	b.WriteString("\n")
	if r.Totals.Messages == 0 {
		b.WriteString("The DLQ is empty.\n")
	} else {
		b.WriteString("| reason / group | count | oldest | soonest expiry | next action | redrivable |\n")
		b.WriteString("|---|---:|---|---|---|---|\n")
		for _, rt := range r.Totals.ByReason {
			inferred := ""
			if rt.Inferred == rt.Count {
				inferred = " (inferred)"
			}
			fmt.Fprintf(&b, "| **%s**%s | %d | %s | %s | %s | %s |\n", esc(string(rt.Reason)), inferred, rt.Count, age(rt.OldestAgeSeconds),
				until(rt.SoonestExpiry, r.GeneratedAt), esc(string(rt.NextAction)), esc(string(rt.Redrivable)))
			for _, g := range r.Groups {
				if g.Reason == rt.Reason {
					fmt.Fprintf(&b, "| ↳ %s | %d | %s | %s | | |\n", md(groupLabel(g, 80)), g.Count, age(g.OldestAgeSeconds), until(g.SoonestExpiry, r.GeneratedAt))
				}
			}
		}
		markdownTenants(&b, r)
	}
	if len(r.Attention) > 0 {
		b.WriteString("\n## Attention\n\n")
		for _, a := range r.Attention {
			fmt.Fprintf(&b, "- %s\n", md(a))
		}
	}
	if len(r.Unreadable) > 0 {
		b.WriteString("\n## Unreadable metadata\n\n")
		for _, e := range r.Unreadable {
			fmt.Fprintf(&b, "- %s: %s\n", textutil.MarkdownCode(e.MessageID), md(e.Problem))
		}
	}
	if len(r.Skipped) > 0 {
		b.WriteString("\n## Skipped\n\n")
		for _, e := range r.Skipped {
			fmt.Fprintf(&b, "- %s (%s): %s\n", textutil.MarkdownCode(e.MessageID), esc(string(e.Stage)), md(e.Problem))
		}
	}
	if r.Export != nil {
		fmt.Fprintf(&b, "\n## Eval export\n\n%s\n", md(exportLine(r.Export)))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func fifoNote(fifo bool) string {
	if fifo {
		return ", FIFO"
	}
	return ""
}

func scanLine(r *report.Report) string {
	s := r.Scan
	state := "complete"
	if r.Partial {
		state = "PARTIAL"
	}
	return fmt.Sprintf("generated %s; %s in %s; scan %s: %d read in %.1fs (%.0f msg/s), stopped: %s",
		r.GeneratedAt.Format(time.RFC3339), plural(r.Totals.Messages, "message"), plural(r.Totals.Groups, "group"), state, s.Unique, s.DurationSeconds, s.MessagesPerSecond, orDash(s.StopReason))
}

// Coverage is the banner of a report whose scan did not see every dead
// letter ("" for a complete one): what it saw against the queue's depth,
// why, and when or how a rerun may see everything.
func Coverage(r *report.Report) string {
	if r.Complete {
		return ""
	}
	s := r.Scan
	c := fmt.Sprintf("PARTIAL SCAN: saw %d of about %d dead letters (%d visible and %d in flight when it started); the counts are a lower bound, not the DLQ's content",
		s.Unique, s.ApproxDepth+s.ApproxInFlight, s.ApproxDepth, s.ApproxInFlight)
	if s.PartialReason != "" {
		c += ": " + s.PartialReason
	}
	return c + ". " + retryAdvice(s)
}

// otherPartialReasons are the report's partial reasons the coverage banner
// does not already say (an export or a ledger read that fell short).
func otherPartialReasons(r *report.Report) []string {
	if r.Complete {
		return r.PartialReasons
	}
	var out []string
	for _, why := range r.PartialReasons {
		if !strings.HasPrefix(why, triage.ScanReasonPrefix) {
			out = append(out, why)
		}
	}
	return out
}

// retryAdvice says when, or with what change, a rerun may see everything.
func retryAdvice(s report.ScanStats) string {
	switch {
	case s.RetryAfterSeconds > 0:
		return fmt.Sprintf("Rerun in about %s, when the hidden letters are visible again.", age(int64(s.RetryAfterSeconds)))
	case s.PartialCause == triage.CauseMaxMessages || s.PartialCause == triage.CauseMaxDuration:
		return "Rerun with a higher bound."
	case s.PartialCause == triage.CauseVisibilityLapsed:
		return "Rerun with a longer visibility timeout."
	case s.PartialCause == triage.CauseFIFOGroups:
		return "A rerun sees the same: a read-only scan of a FIFO DLQ sees at most a batch of each message group."
	default:
		return "Rerun."
	}
}

// ExpiryLine is the report's expiry risk in one line: the soonest deletion
// and how many fall within the warning window.
func ExpiryLine(r *report.Report) string {
	e := r.Expiry
	if e.SoonestExpiry.IsZero() {
		return fmt.Sprintf("expiry: nothing to lose (DLQ retention %dh, warning window %dh)", e.DLQRetentionHours, e.WarningHours)
	}
	return fmt.Sprintf("expiry: soonest %s (message %s); %d within the %dh warning window; DLQ retention %dh",
		until(e.SoonestExpiry, r.GeneratedAt), e.SoonestMessageID, e.ExpiringSoon, e.WarningHours, e.DLQRetentionHours)
}

func exportLine(e *report.ExportResult) string {
	if e.Error != "" {
		return fmt.Sprintf("eval export to %s FAILED: %s", e.Destination, e.Error)
	}
	return fmt.Sprintf("eval export to %s: %d new records (%d candidates, %d already exported) %s",
		e.Destination, e.Exported, e.Candidates, e.AlreadyExported, orDash(e.RecordsKey))
}

// groupLabel is a group's short name: fingerprint start, tool and signature.
func groupLabel(g report.Group, max int) string {
	parts := []string{g.Fingerprint}
	if g.Tool != "" {
		t := g.Tool
		if g.ToolVersion != "" {
			t += "@" + g.ToolVersion
		}
		parts = append(parts, t)
	}
	if g.Signature != "" {
		sig := g.Signature
		if rs := []rune(sig); len(rs) > max {
			sig = string(rs[:max-1]) + "…"
		}
		parts = append(parts, sig)
	}
	return strings.Join(parts, " ")
}

// age writes seconds as "3d4h", "5h12m", "42m" or "30s".
func age(sec int64) string {
	d := time.Duration(sec) * time.Second
	switch {
	case d >= 24*time.Hour:
		return fmt.Sprintf("%dd%dh", d/(24*time.Hour), (d%(24*time.Hour))/time.Hour)
	case d >= time.Hour:
		return fmt.Sprintf("%dh%dm", d/time.Hour, (d%time.Hour)/time.Minute)
	case d >= time.Minute:
		return fmt.Sprintf("%dm", d/time.Minute)
	default:
		return fmt.Sprintf("%ds", sec)
	}
}

// until writes a deletion time with how far away it is.
func until(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := t.Sub(now)
	if d <= 0 {
		return t.Format("2006-01-02 15:04Z") + " (due now)"
	}
	return t.Format("2006-01-02 15:04Z") + " (in " + age(int64(d/time.Second)) + ")"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// md is text of the report or a message's as inert Markdown
// (textutil.Markdown): one line, no link, no HTML, no emphasis, and a | that
// does not end a table cell.
func md(s string) string { return textutil.Markdown(s) }

// plural is "1 noun" or "n nouns" (triage's report uses the same rule).
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "y") && !strings.HasSuffix(noun, "ey") {
		return strconv.Itoa(n) + " " + noun[:len(noun)-1] + "ies"
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
