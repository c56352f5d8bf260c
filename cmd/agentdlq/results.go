package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/internal/textutil"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/redrive"
)

// cancelResult is what `redrive cancel -o json` prints.
type cancelResult struct {
	Pipeline  string `json:"pipeline"`
	Cancelled bool   `json:"cancelled"`
	// Moved is about how many messages the task had moved.
	Moved int64 `json:"moved"`
}

// rejectResult is what `redrive reject -o json` prints.
type rejectResult struct {
	Pipeline     string              `json:"pipeline"`
	Reasons      []deadletter.Reason `json:"reasons"`
	Fingerprints []string            `json:"fingerprints,omitempty"`
	Rejected     bool                `json:"rejected"`
	// Counts are the dead letters rejected by reason; Warnings what should
	// make the owner think twice (redrive.RejectWarnings), also on stderr.
	Counts   map[string]int `json:"counts,omitempty"`
	Warnings []string       `json:"warnings,omitempty"`
}

// planMarkdown prints a redrive plan as Markdown: a heading, the groups as a
// table, and the command of each group.
func planMarkdown(w io.Writer, pl *redrive.Plan) error {
	fmt.Fprintf(w, "## Redrive plan: %s\n\nOwner %s. %s in %s.\n\n", pl.Pipeline, pl.Owner, textutil.Count(pl.Total, "dead letter", "dead letters"), textutil.Count(len(pl.Groups), "group", "groups"))
	for _, p := range pl.Partial {
		fmt.Fprintf(w, "> The triage scan was partial (%s): counts may be low.\n\n", p)
	}
	if pl.Copies > 0 {
		fmt.Fprintf(w, "> %s.\n\n", copiesLine(pl))
	}
	if pl.Filter != nil {
		fmt.Fprintf(w, "> **Filtered**: %s; the plan and its commands are of those only.\n\n", filterLine(pl.Filter))
	}
	rows := make([][]string, 0, len(pl.Groups))
	for _, g := range pl.Groups {
		rows = append(rows, []string{string(g.Reason), code(orDash(g.Fingerprint)), strconv.Itoa(g.Count), mayText(g), g.Why})
	}
	if err := mdTable(w, []string{"reason", "fingerprint", "count", "redrive", "why"}, rows); err != nil {
		return err
	}
	if len(pl.Groups) > 0 {
		fmt.Fprintln(w, "\n### Commands")
		for _, g := range pl.Groups {
			fmt.Fprintf(w, "\n%s %s (%d):\n\n```sh\n%s\n```\n", g.Reason, orDash(g.Fingerprint), g.Count, stepsCommand(planPipeline(pl), g.Next, planFilter(pl)))
		}
	}
	_, err := fmt.Fprintf(w, "\nWhole DLQ: %s\n", startLine(pl))
	return err
}

// tasksMarkdown prints a DLQ's move tasks as a Markdown table.
func tasksMarkdown(w io.Writer, tasks []redrive.MoveTask) error {
	rows := make([][]string, 0, len(tasks))
	for _, t := range tasks {
		rows = append(rows, []string{t.Status, taskProgress(t), strconv.Itoa(t.Rate), t.StartedAt.Format(time.RFC3339), code(t.TaskHandle), t.FailureReason})
	}
	return mdTable(w, []string{"status", "moved", "rate/s", "started", "task handle", "failure"}, rows)
}

// code is s as Markdown code, unless it is the dash of an empty value.
func code(s string) string {
	if s == "" || s == "-" {
		return s
	}
	return "`" + s + "`"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// writeTable prints rows under an upper-case header, in aligned columns.
func writeTable(w io.Writer, header []string, rows [][]string) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.ToUpper(strings.Join(header, "\t")))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	_ = tw.Flush()
}

var ledgerHeader = []string{"key", "state", "effect started", "receipt", "dead-lettered", "redriven", "last reason", "updated", "args digest"}

// ledgerRow is one key's row of `ledger get`.
func ledgerRow(e ledger.Entry) []string {
	started := "no"
	if e.EffectStarted {
		started = "yes"
	}
	return []string{e.Key, string(e.State), started, orDash(e.Receipt), strconv.Itoa(e.DeadLetterCount), strconv.Itoa(e.RedriveCount),
		orDash(string(e.LastReason)), e.UpdatedAt.UTC().Format(time.RFC3339), orDash(ledger.ShortDigest(e.ArgsDigest))}
}

// taskProgress is a move task's "moved/total" ("moved/?" while SQS does
// not know the total yet).
func taskProgress(t redrive.MoveTask) string {
	if t.ToMove == 0 && t.Status == "RUNNING" {
		return fmt.Sprintf("%d/?", t.Moved)
	}
	return fmt.Sprintf("%d/%d", t.Moved, t.ToMove)
}

// copiesLine says how many extra copies of dead letters a plan's DLQ holds
// (not in its counts) and what a select does with them.
func copiesLine(pl *redrive.Plan) string {
	line := fmt.Sprintf("the DLQ also holds %s of %s (a dead-letter send retried after SQS took it), not counted above: a select moves one and deletes the identical others after the move",
		textutil.Count(pl.Copies, "extra copy", "extra copies"), textutil.Count(pl.CopiedLetters, "dead letter", "dead letters"))
	if pl.CopiesDiffering > 0 {
		line += fmt.Sprintf("; %d of the copies differ in their dlq_meta (dead-lettered again): a select moves those too", pl.CopiesDiffering)
	}
	return line
}
