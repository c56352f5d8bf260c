package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentdlq/agentdlq/internal/textutil"
)

// format is what a command prints its result as: -o/--output.
type format string

const (
	formatTable    format = "table"
	formatJSON     format = "json"
	formatMarkdown format = "markdown"
)

// output is the -o/--output flag of a command that prints a result, with
// --json (and, where the command has Markdown, --markdown) kept as aliases.
// A value outside the command's formats is bad input (exit 2).
type output struct {
	format  format
	allowed []format
	// chosen is the format a flag of the command line chose, and by which
	// flag: two flags that choose different formats are bad input.
	chosen, by string
	// undecided is set when two flags chose different formats: the
	// refusal is plain text on stderr, as neither format was agreed on.
	undecided bool
}

// addOutput registers -o/--output (default table) on c for the formats it
// has (table first), with --json as an alias of -o json, and --markdown as
// one of -o markdown when markdown is among them. The formats are named in
// the flag's help.
func addOutput(c *cobra.Command, formats ...format) *output {
	if len(formats) == 0 {
		formats = []format{formatTable, formatJSON}
	}
	o := &output{format: formats[0], allowed: formats}
	names := make([]string, len(formats))
	for i, f := range formats {
		names[i] = string(f)
	}
	c.Flags().VarP(o, "output", "o", "output format: "+strings.Join(names, ", "))
	c.Flags().AddFlag(aliasFlag(o, "json", formatJSON))
	if o.has(formatMarkdown) {
		c.Flags().AddFlag(aliasFlag(o, "markdown", formatMarkdown))
	}
	return o
}

func (o *output) has(f format) bool {
	for _, a := range o.allowed {
		if a == f {
			return true
		}
	}
	return false
}

// String, Set and Type make output a pflag.Value.
func (o *output) String() string     { return string(o.format) }
func (o *output) Type() string       { return "format" }
func (o *output) Set(v string) error { return o.choose(v, "-o") }

// choose sets the format to v, named by the flag by; a different format
// chosen earlier by another flag is refused.
func (o *output) choose(v, by string) error {
	f := format(strings.ToLower(strings.TrimSpace(v)))
	if f == "text" {
		f = formatTable
	}
	if !o.has(f) {
		return &formatError{msg: fmt.Sprintf("%s %q is not an output format of this command: %s", by, v, o.useOne())}
	}
	if o.chosen != "" && o.chosen != string(f) && o.by != by {
		o.undecided = true
		return &formatError{msg: fmt.Sprintf("%s and %s choose different formats (%s, %s): %s", o.by, by, o.chosen, f, o.useOne())}
	}
	o.format, o.chosen, o.by = f, string(f), by
	return nil
}

// useOne is what to do about a format refused: "use one of -o table|json".
func (o *output) useOne() string {
	names := make([]string, len(o.allowed))
	for i, a := range o.allowed {
		names[i] = string(a)
	}
	return "use one of -o " + strings.Join(names, "|")
}

// formatError is an -o, --json or --markdown refused: its message names
// the flags at fault and the formats to choose from, and stands alone
// (the flag error function drops pflag's `invalid argument "true" for
// "--markdown" flag:` around it).
type formatError struct{ msg string }

func (e *formatError) Error() string { return e.msg }

// JSON reports whether the result (and an error) is printed as JSON.
func (o *output) JSON() bool { return o != nil && !o.undecided && o.format == formatJSON }

// errorJSON reports whether an error is printed as JSON (on stdout): when
// the command line asked for JSON (-o json, --json), not when JSON is only
// the command's default (agentdlq work), whose refusals are words on
// stderr.
func (o *output) errorJSON() bool { return o.JSON() && o.chosen == string(formatJSON) }

// Markdown reports whether the result is printed as Markdown.
func (o *output) Markdown() bool { return o != nil && o.format == formatMarkdown }

// alias is a boolean flag that sets an output's format: --json is -o json.
type alias struct {
	o *output
	f format
}

func aliasFlag(o *output, name string, f format) *pflag.Flag {
	fl := &pflag.Flag{Name: name, Usage: "same as -o " + string(f), Value: &alias{o: o, f: f}, NoOptDefVal: "true"}
	return fl
}

func (a *alias) String() string { return fmt.Sprint(a.o.format == a.f) }
func (a *alias) Type() string   { return "bool" }
func (a *alias) Set(v string) error {
	switch strings.ToLower(v) {
	case "true", "1":
		return a.o.choose(string(a.f), "--"+string(a.f))
	case "false", "0":
		if a.o.format == a.f {
			a.o.format, a.o.chosen, a.o.by = a.o.allowed[0], "", ""
		}
	default:
		return fmt.Errorf("%q is not a boolean", v)
	}
	return nil
}

// outputOf is the output flag of c, or nil when c has none.
func outputOf(c *cobra.Command) *output {
	if c == nil {
		return nil
	}
	if fl := c.Flags().Lookup("output"); fl != nil {
		if o, ok := fl.Value.(*output); ok {
			return o
		}
	}
	return nil
}

// writeJSON prints v as indented JSON without escaping <, > and &: a reason
// such as "status <500 & retryable" reads as it was written. The bidi and
// C1 controls, which JSON may carry raw, are written as their \u escapes
// (textutil.JSONWriter): the same JSON value, and a terminal that shows it
// shows the escape.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(textutil.JSONWriter(w))
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeJSONLine prints v as one line of JSON without escaping <, > and &.
func writeJSONLine(w io.Writer, v any) error {
	enc := json.NewEncoder(textutil.JSONWriter(w))
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// mdTable prints a Markdown (GitHub) table: a header row, the separator,
// and the rows. Each cell is inert Markdown text (textutil.Markdown: one
// line, a | that does not end the cell, no link, no HTML), or a code span
// when code made it (textutil.MarkdownCode), so that the table keeps its
// shape whatever a message put in a cell.
func mdTable(w io.Writer, header []string, rows [][]string) error {
	cell := func(s string) string {
		if c, ok := strings.CutPrefix(s, codeMark); ok {
			return textutil.MarkdownCode(c)
		}
		return textutil.Markdown(s)
	}
	line := func(cells []string) string {
		out := make([]string, len(cells))
		for i, c := range cells {
			out[i] = cell(c)
		}
		return "| " + strings.Join(out, " | ") + " |\n"
	}
	var b strings.Builder
	b.WriteString(line(header))
	seps := make([]string, len(header))
	for i := range seps {
		seps[i] = "---"
	}
	b.WriteString("| " + strings.Join(seps, " | ") + " |\n")
	for _, r := range rows {
		b.WriteString(line(r))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
